import type { FeedUser, User } from '@rampart/contracts';
import type { Principal } from '../plugins/principal.ts';
import type { Organization } from '../store/index.ts';
import { writtenOnce } from './page-json.ts';

/** Each principal's `header.user`, made once: principals are cached by plugins/auth.ts and never changed. */
const users = new WeakMap<Principal, User>();

/**
 * `header.user`: the real calling user and organization (spec 2.2). Frozen, and one object per
 * principal, so that page headers write it from its JSON made once (page-json.ts).
 */
export function userObject(principal: Principal): User {
  let known = users.get(principal);
  if (!known) {
    known = writtenOnce(newUserObject(principal));
    users.set(principal, known);
  }
  return known;
}

function newUserObject(principal: Principal): User {
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

/**
 * The organization's delay, the one rule every read path applies (feeds, `/ipv4`, `/flat`, score
 * lists, look-ups, STIX, the console's overview): a record whose `ts` as the organization sees it
 * (its anchor) is later than the second returned is not visible to it yet. `null`: no delay, every
 * record is visible. The feeds apply it to their settled second (`feedPage`'s upper bound).
 */
export function visibleUpTo(org: Organization, now: number): number | null {
  const delay = delaySeconds(org);
  return delay > 0 ? now - delay : null;
}

/** `visibleUpTo` as a predicate over rows that carry the organization's `ts`. */
export function visibleTo(org: Organization, now: number): (row: { ts: number }) => boolean {
  const upTo = visibleUpTo(org, now);
  return upTo === null ? () => true : (row) => Number(row.ts) <= upTo;
}

export function isoMillis(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString();
}
