import type { Db } from './db.ts';

/** A license joined with its creator and organization, as the 2.10 record needs them. */
export interface VpnLicenseRow {
  id: number;
  vid: string;
  org_id: number;
  account_name: string;
  notes: string;
  address: string;
  public_key: string;
  private_key_enc: string;
  ts: number;
  exist: boolean;
  org_gid: string;
  org_name: string;
  org_trust: number;
  org_delay: string;
  org_credit_tokens: number;
  org_debit_tokens: number;
  org_is_public: number;
  user_guid: string;
  user_name: string;
  user_surname: string;
  user_username: string;
  user_role: number;
  user_unsuccessful_login: number;
}

export interface NewVpnLicense {
  vid: string;
  orgId: number;
  userId: number;
  accountName: string;
  notes: string;
  publicKey: string;
  /** Encrypts the private key once the address (and so the row) is settled. */
  privateKeyEnc: string;
  /** Addresses a client may get, in the order to try them (dotted decimal). */
  candidates: () => Iterable<string>;
  /** The pool as CIDR, to read which of its addresses are taken. */
  pool: string;
}

const SELECT = `
  select l.id, l.vid, l.org_id, l.account_name, l.notes, host(l.address) as address, l.public_key, l.private_key_enc,
         floor(extract(epoch from l.created_at))::bigint as ts, (l.deactivated_at is null) as exist,
         o.gid as org_gid, o.name as org_name, o.trust as org_trust, o.delay as org_delay,
         o.credit_tokens as org_credit_tokens, o.debit_tokens as org_debit_tokens, o.is_public as org_is_public,
         u.guid as user_guid, u.name as user_name, u.surname as user_surname, u.username as user_username,
         u.role as user_role, u.unsuccessful_login as user_unsuccessful_login
    from vpn_licenses l
    join organizations o on o.id = l.org_id
    join users u on u.id = l.created_by`;

// Serializes address allocation across server replicas on one PostgreSQL (PGlite has one connection).
const POOL_LOCK_KEY = 7_231_007;

export class VpnStore {
  constructor(private readonly db: Db) {}

  /**
   * Inserts a license on the lowest free address of the pool, or returns null when the pool is
   * exhausted. Allocation holds a transaction-scoped advisory lock, and the partial unique index
   * on active addresses stops any two active licenses from sharing one even without it.
   */
  async create(input: NewVpnLicense): Promise<VpnLicenseRow | null> {
    const id = await this.db.transaction(async (tx) => {
      if (this.db.kind === 'postgres') await tx.query('select pg_advisory_xact_lock($1)', [POOL_LOCK_KEY]);
      const taken = await tx.query<{ address: string }>(
        'select host(address) as address from vpn_licenses where deactivated_at is null and address <<= $1::inet',
        [input.pool],
      );
      const used = new Set(taken.rows.map((r) => r.address));
      let address: string | undefined;
      for (const candidate of input.candidates()) {
        if (!used.has(candidate)) {
          address = candidate;
          break;
        }
      }
      if (!address) return null;
      const res = await tx.query<{ id: number }>(
        `insert into vpn_licenses (vid, org_id, created_by, account_name, notes, address, public_key, private_key_enc)
         values ($1, $2, $3, $4, $5, $6::inet, $7, $8) returning id`,
        [input.vid, input.orgId, input.userId, input.accountName, input.notes, address, input.publicKey, input.privateKeyEnc],
      );
      return res.rows[0]!.id;
    });
    if (id === null) return null;
    const res = await this.db.query<VpnLicenseRow>(`${SELECT} where l.id = $1`, [id]);
    return res.rows[0]!;
  }

  /** A license of this organization (active or not); other organizations' are undefined. */
  async byVid(orgId: number, vid: string): Promise<VpnLicenseRow | undefined> {
    const res = await this.db.query<VpnLicenseRow>(`${SELECT} where l.vid = $1 and l.org_id = $2`, [vid, orgId]);
    return res.rows[0];
  }

  /** Active licenses of an organization, oldest first, at most `limit`. */
  async listActive(orgId: number, limit: number): Promise<VpnLicenseRow[]> {
    const res = await this.db.query<VpnLicenseRow>(
      `${SELECT} where l.org_id = $1 and l.deactivated_at is null order by l.created_at, l.id limit $2`,
      [orgId, limit],
    );
    return res.rows;
  }

  /**
   * Deactivates an active license of this organization: its address returns to the pool and its
   * encrypted private key is erased. False when there is no such active license.
   */
  async deactivate(orgId: number, vid: string, userId: number): Promise<boolean> {
    const res = await this.db.query(
      `update vpn_licenses set deactivated_at = now(), deactivated_by = $3, private_key_enc = ''
        where vid = $1 and org_id = $2 and deactivated_at is null`,
      [vid, orgId, userId],
    );
    return res.rowCount > 0;
  }
}
