import { z } from 'zod';
import { EpochSeconds, OrgId, VpnId } from './primitives.ts';
import { VpnUser } from './user.ts';

export const VpnLicense = z
  .object({
    vid: VpnId,
    account_name: z.string(),
    notes: z.string(),
    ts: EpochSeconds,
    user: VpnUser,
    mgid: OrgId,
    exist: z.boolean(),
  })
  .meta({ description: 'A secure-VPN license (spec 2.10)' });
export type VpnLicense = z.infer<typeof VpnLicense>;

export const VpnLicenseList = z.array(VpnLicense).meta({ description: "Active licenses of the caller's organization" });
export type VpnLicenseList = z.infer<typeof VpnLicenseList>;

export const VpnCreateBody = z.object({
  account_name: z.string().trim().min(1).max(256),
  notes: z.string().max(4096).optional(),
});
export type VpnCreateBody = z.infer<typeof VpnCreateBody>;

export const VpnParams = z.object({ vid: VpnId });
export type VpnParams = z.infer<typeof VpnParams>;

/** How to install a license: a complete `wg-quick` client configuration and the commands. */
export const VpnInstallation = z
  .object({
    interface: z.string().describe('Interface (and configuration file) name the commands use'),
    address: z.ipv4().describe("The client's tunnel address, from the server's pool"),
    endpoint: z.string().describe('Server host:port'),
    public_key: z.string().describe("The client's WireGuard public key (base64)"),
    server_public_key: z.string(),
    private_key_shown: z.boolean().describe('false: PrivateKey is masked, only organization admins see it'),
    config: z.string().describe('Contents of /etc/wireguard/<interface>.conf'),
    commands: z.array(z.string()).describe('Client commands, in order'),
    server_peer: z.string().describe('What the VPN server operator adds (wg set ... peer)'),
  })
  .meta({ description: 'Installation instructions of a VPN license' });
export type VpnInstallation = z.infer<typeof VpnInstallation>;

/** `GET /vpn/{vid}`: the 2.10 record plus installation (null once deactivated: the key is destroyed). */
export const VpnLicenseDetail = VpnLicense.extend({ installation: VpnInstallation.nullable() }).meta({
  description: 'A secure-VPN license with its installation instructions',
});
export type VpnLicenseDetail = z.infer<typeof VpnLicenseDetail>;
