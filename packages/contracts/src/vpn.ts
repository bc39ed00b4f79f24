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
