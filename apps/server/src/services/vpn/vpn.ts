import { ApiError, ROLE, type VpnLicense, type VpnLicenseDetail } from '@rampart/contracts';
import type { VpnConfig } from '../../config-tools.ts';
import type { Principal } from '../../plugins/principal.ts';
import type { Store, VpnLicenseRow } from '../../store/index.ts';
import { randomIdPart } from '../ids.ts';
import { installation } from './install.ts';
import { generateWireGuardKeyPair, VpnKeyBox } from './keys.ts';
import { vpnPool, type VpnPool } from './pool.ts';

/** A page of active licenses is bounded; a /16 pool is the largest configurable. */
export const VPN_LIST_LIMIT = 65_536;

export function licenseRecord(row: VpnLicenseRow): VpnLicense {
  return {
    vid: row.vid,
    account_name: row.account_name,
    notes: row.notes,
    ts: row.ts,
    user: {
      guid: row.user_guid,
      name: row.user_name,
      surname: row.user_surname,
      username: row.user_username,
      role: row.user_role as VpnLicense['user']['role'],
      unsuccessful_login: row.user_unsuccessful_login,
      member_of: {
        gid: row.org_gid,
        name: row.org_name,
        trust: row.org_trust,
        delay: row.org_delay,
        credit_tokens: row.org_credit_tokens,
        debit_tokens: row.org_debit_tokens,
        is_public: row.org_is_public,
      },
    },
    mgid: row.org_gid,
    exist: row.exist,
  };
}

/** Secure-VPN licenses (spec 4.6): business rules over the store, the pool and the key box. */
export class VpnService {
  private readonly pool: VpnPool;
  private box: Promise<VpnKeyBox> | undefined;

  constructor(
    private readonly store: Store,
    private readonly config: VpnConfig,
  ) {
    this.pool = vpnPool(config.pool);
  }

  private keyBox(): Promise<VpnKeyBox> {
    this.box ??= (async () => new VpnKeyBox(this.config.keySecret ?? (await this.store.secrets.get('vpn_private_keys'))))();
    // A store error must not stick: the next request asks again.
    this.box.catch(() => (this.box = undefined));
    return this.box;
  }

  private configured(): VpnConfig & { endpoint: string; serverPublicKey: string } {
    const { endpoint, serverPublicKey } = this.config;
    if (!endpoint || !serverPublicKey) {
      throw new ApiError('conflict', 'the secure VPN is not configured on this server: the operator must set VPN_ENDPOINT and VPN_SERVER_PUBLIC_KEY');
    }
    return { ...this.config, endpoint, serverPublicKey };
  }

  async create(principal: Principal, body: { account_name: string; notes?: string | undefined }): Promise<VpnLicense> {
    this.configured();
    const keys = generateWireGuardKeyPair();
    const vid = `RMP-VID-LIC${randomIdPart()}`;
    const row = await this.store.vpn.create({
      vid,
      orgId: principal.org.id,
      userId: principal.user.id,
      accountName: body.account_name,
      notes: body.notes ?? '',
      publicKey: keys.publicKey,
      privateKeyEnc: (await this.keyBox()).seal(keys.privateKey, vid),
      candidates: () => this.pool.candidates(),
      pool: this.pool.cidr,
    });
    if (!row) {
      throw new ApiError('conflict', `the VPN address pool ${this.pool.cidr} is exhausted (${this.pool.capacity} client addresses, all in use): deactivate a license or widen VPN_POOL`);
    }
    return licenseRecord(row);
  }

  async list(principal: Principal): Promise<VpnLicense[]> {
    return (await this.store.vpn.listActive(principal.org.id, VPN_LIST_LIMIT)).map(licenseRecord);
  }

  /** The license with instructions; the private key only for organization admins. */
  async detail(principal: Principal, vid: string): Promise<VpnLicenseDetail> {
    const row = await this.store.vpn.byVid(principal.org.id, vid);
    if (!row) throw new ApiError('not_found', `no VPN license ${vid} in your organization`);
    if (!row.exist) return { ...licenseRecord(row), installation: null };
    const privateKey = principal.user.role >= ROLE.admin ? (await this.keyBox()).open(row.private_key_enc, row.vid) : null;
    return { ...licenseRecord(row), installation: installation({ address: row.address, publicKey: row.public_key, privateKey, config: this.configured() }) };
  }

  async deactivate(principal: Principal, vid: string): Promise<void> {
    if (await this.store.vpn.deactivate(principal.org.id, vid, principal.user.id)) return;
    const row = await this.store.vpn.byVid(principal.org.id, vid);
    throw new ApiError('not_found', row ? `VPN license ${vid} is already deactivated` : `no VPN license ${vid} in your organization`);
  }
}
