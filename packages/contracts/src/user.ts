import { z } from 'zod';
import { Count, OrgId, Role, UserId } from './primitives.ts';

/** Organization of a user (spec 2.2). Coin fields appear only on some responses. */
export const MemberOf = z
  .object({
    gid: OrgId,
    name: z.string(),
    trust: z.number().min(0).max(1).describe('Trust level of the organization, 0 to 1'),
    delay: z.string().describe('Seconds by which this organization sees new indicators late'),
    credit_tokens: Count.optional().describe('Coins granted'),
    debit_tokens: Count.optional().describe('Coins consumed; balance = credit_tokens - debit_tokens'),
    is_public: z.int().optional().describe('Present in VPN license records only'),
  })
  .meta({ description: 'The organization a user belongs to' });
export type MemberOf = z.infer<typeof MemberOf>;

const userShape = {
  guid: UserId,
  name: z.string(),
  surname: z.string(),
  username: z.string().describe('The e-mail address of the user'),
  role: Role,
  unsuccessful_login: Count,
};

export const User = z.object({ ...userShape, member_of: MemberOf }).meta({ description: 'The calling user (spec 2.2)' });
export type User = z.infer<typeof User>;

/** `header.user` of files, domains and URL pages: the coin fields are always present. */
export const FeedUser = z.object({
  ...userShape,
  member_of: MemberOf.extend({ credit_tokens: Count, debit_tokens: Count }),
});
export type FeedUser = z.infer<typeof FeedUser>;

/** `user` of a VPN license record: coin fields and `is_public` are always present. */
export const VpnUser = z.object({
  ...userShape,
  member_of: MemberOf.extend({ credit_tokens: Count, debit_tokens: Count, is_public: z.int() }),
});
export type VpnUser = z.infer<typeof VpnUser>;
