import type { FeedUser, User } from '@rampart/contracts';
import type { Principal } from '../plugins/auth.ts';
import type { Organization } from '../store/index.ts';

/** `header.user`: the real calling user and organization (spec 2.2). */
export function userObject(principal: Principal): User {
  const { user, org } = principal;
  return {
    guid: user.guid,
    name: user.name,
    surname: user.surname,
    username: user.username,
    role: user.role as User['role'],
    unsuccessful_login: user.unsuccessful_login,
    member_of: { gid: org.gid, name: org.name, trust: org.trust, delay: org.delay },
  };
}

/** The same user with the organization's current coin figures (files, domains, URL pages). */
export function feedUserObject(principal: Principal, fresh: Organization): FeedUser {
  const base = userObject(principal);
  return { ...base, member_of: { ...base.member_of, credit_tokens: fresh.credit_tokens, debit_tokens: fresh.debit_tokens } };
}

/** `member_of.delay` is text holding whole seconds; anything else counts as no delay. */
export function delaySeconds(org: Organization): number {
  const n = Number.parseInt(org.delay, 10);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

export function isoMillis(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString();
}
