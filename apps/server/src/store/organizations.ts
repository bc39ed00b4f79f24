import type { Queryable } from './db.ts';

export interface Organization {
  id: number;
  gid: string;
  name: string;
  trust: number;
  delay: string;
  credit_tokens: number;
  debit_tokens: number;
  is_public: number;
}

const COLUMNS = 'id, gid, name, trust, delay, credit_tokens, debit_tokens, is_public';

export class OrganizationStore {
  constructor(private readonly db: Queryable) {}

  async create(input: { gid: string; name: string; trust: number; delay?: string; credits?: number; isPublic?: boolean }): Promise<Organization> {
    const res = await this.db.query<Organization>(
      `insert into organizations (gid, name, trust, delay, credit_tokens, is_public)
       values ($1, $2, $3, $4, $5, $6) returning ${COLUMNS}`,
      [input.gid, input.name, input.trust, input.delay ?? '0', input.credits ?? 0, input.isPublic ? 1 : 0],
    );
    return res.rows[0]!;
  }

  async byGid(gid: string): Promise<Organization | undefined> {
    const res = await this.db.query<Organization>(`select ${COLUMNS} from organizations where gid = $1`, [gid]);
    return res.rows[0];
  }

  async byName(name: string): Promise<Organization | undefined> {
    const res = await this.db.query<Organization>(`select ${COLUMNS} from organizations where name = $1`, [name]);
    return res.rows[0];
  }

  async byId(id: number): Promise<Organization | undefined> {
    const res = await this.db.query<Organization>(`select ${COLUMNS} from organizations where id = $1`, [id]);
    return res.rows[0];
  }

  async count(): Promise<number> {
    const res = await this.db.query<{ n: number }>('select count(*)::int as n from organizations');
    return res.rows[0]!.n;
  }

  async grantCoins(gid: string, amount: number): Promise<Organization | undefined> {
    const res = await this.db.query<Organization>(
      `update organizations set credit_tokens = credit_tokens + $2 where gid = $1 returning ${COLUMNS}`,
      [gid, amount],
    );
    return res.rows[0];
  }

  async setTrust(gid: string, trust: number): Promise<Organization | undefined> {
    const res = await this.db.query<Organization>(`update organizations set trust = $2 where gid = $1 returning ${COLUMNS}`, [gid, trust]);
    return res.rows[0];
  }

  /**
   * Takes `price` coins if the balance covers them, in one statement, so concurrent
   * requests on any number of replicas can never overdraw. Returns the balance left,
   * or undefined when the balance was too small (nothing taken).
   */
  async debit(orgId: number, price: number): Promise<number | undefined> {
    const res = await this.db.query<{ remaining: number }>(
      `update organizations set debit_tokens = debit_tokens + $2
       where id = $1 and credit_tokens - debit_tokens >= $2
       returning credit_tokens - debit_tokens as remaining`,
      [orgId, price],
    );
    return res.rows[0]?.remaining;
  }

  /** Gives back a debit whose request did not succeed. */
  async refund(orgId: number, price: number): Promise<number> {
    const res = await this.db.query<{ remaining: number }>(
      `update organizations set debit_tokens = debit_tokens - $2 where id = $1
       returning credit_tokens - debit_tokens as remaining`,
      [orgId, price],
    );
    return res.rows[0]?.remaining ?? 0;
  }

  async balance(orgId: number): Promise<number> {
    const res = await this.db.query<{ b: number }>('select credit_tokens - debit_tokens as b from organizations where id = $1', [orgId]);
    return res.rows[0]?.b ?? 0;
  }
}
