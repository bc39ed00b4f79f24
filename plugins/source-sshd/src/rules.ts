import type { DetectionMode } from '@rampart/plugin-kit';
import type { AttemptCount } from './attempt-ledger.ts';

/*
 * OpenSSH failure patterns, ported from fail2ban 1.0.2's filter.d/sshd.conf (the `cmnfailre`,
 * `mdre-<mode>` and `cfooterre` lists, in that order: the first rule that matches wins, as in
 * fail2ban). Python's conditional groups `(?(name)…)` have no JavaScript equivalent, so the one
 * rule that uses them ("Failed <method> for …") is split into its four branches in fail2ban's
 * backtracking order. Flags mirror fail2ban's tags: `nofail` (<F-NOFAIL>, a helper line that
 * only records the address of a connection), `forget` (<F-MLFFORGET>, the connection ends) and
 * `gained` (<F-MLFGAINED>, a successful login). `counts` is ours: how the line counts toward its
 * connection's attempts (attempt-ledger.ts); `floor` unless said otherwise.
 */

/** The groups a rule may capture (fail2ban's tags), by name. */
export type GroupName = 'ip4' | 'ip6' | 'dns' | 'user' | 'ruser' | 'nf';

export interface SshRule {
  /** Literal starts of the message this rule can match; the cheap prefilter. */
  leads: string[];
  /**
   * The pattern with its named groups made plain capturing groups: a match then builds no
   * `groups` object; `at` says which index of the match holds each name (0: not in the rule).
   */
  re: RegExp;
  at: Record<GroupName, number>;
  /** The pattern as written, with its names (what `re` and `at` are made from). */
  source: string;
  kind: string;
  nofail?: boolean;
  forget?: boolean;
  gained?: boolean;
  counts: AttemptCount;
}

const HOST = String.raw`(?:(?:::f{4,6}:)?(?<ip4>(?:\d{1,3}\.){3}\d{1,3})|\[?(?<ip6>(?:[0-9a-fA-F]{1,4}::?|::){1,7}(?:[0-9a-fA-F]{1,4}|(?<=:):))\]?|(?<dns>[\w\-.^_]*\w))`;
const SUFF = String.raw`(?: (?:port \d+|on \S+|\[preauth\])){0,3}\s*`;
const ON_PORT = String.raw`(?: (?:port \d+|on \S+)){0,2}`;
const AUTHNG_USER = String.raw`(?: (?:invalid|authenticating) user (?<user>\S+|.*?))?`;
const ALG = String.raw`(?:(?:\w+ (?!found\b)){0,2}\w+)`;
const NO_FROM_TO_END = String.raw`(?:(?! from ).)*$`;

const GROUP_NAMES: readonly GroupName[] = ['ip4', 'ip6', 'dns', 'user', 'ruser', 'nf'];

/**
 * `source` (named groups allowed) as a pattern without names, and the match index of each name:
 * capturing groups are numbered by their opening parenthesis, outside escapes and classes.
 */
export function unnamed(source: string): { re: RegExp; at: Record<GroupName, number> } {
  const at: Record<GroupName, number> = { ip4: 0, ip6: 0, dns: 0, user: 0, ruser: 0, nf: 0 };
  let plain = '';
  let groups = 0;
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      plain += c + source[++i]!;
      continue;
    }
    if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') {
      const named = /^\(\?<([A-Za-z_]\w*)>/.exec(source.slice(i));
      if (named) {
        const name = named[1] as GroupName;
        if (!GROUP_NAMES.includes(name) || at[name] !== 0) throw new Error(`ssh rule: unexpected group ${name}`);
        at[name] = ++groups;
        plain += '(';
        i += named[0].length - 1;
        continue;
      }
      if (source[i + 1] !== '?') groups++;
    }
    plain += c;
  }
  return { re: new RegExp(plain), at };
}

function re(written: string): { re: RegExp; at: Record<GroupName, number>; source: string } {
  const source = '^' + written.replaceAll('<HOST>', HOST);
  return { ...unnamed(source), source };
}

const rule = (leads: string | string[], source: string, kind: string, flags: Partial<Pick<SshRule, 'nofail' | 'forget' | 'gained' | 'counts'>> = {}): SshRule => ({
  leads: Array.isArray(leads) ? leads : [leads],
  ...re(source),
  kind,
  counts: 'floor',
  ...flags,
});
// sshd's "Failed <method> for …": one line per attempt.
const EACH = { counts: 'each' } as const;
// PAM's verdict on one password attempt, which sshd logs again as "Failed …".
const PAM = { counts: 'pam' } as const;

const notAllowed = (why: string) =>
  rule('User ', String.raw`User (?<user>\S+|.*?) from <HOST> not allowed because ${why}${SUFF}$`, 'user_not_allowed');

const FAILED = String.raw`Failed (?:(?<nf>publickey)|\S+) for `;

const common: SshRule[] = [
  rule(['Authentication ', 'authentication '], String.raw`[aA]uthentication (?:failure|error|failed) for (?<user>.*) from <HOST>(?: via \S+)?${SUFF}$`, 'auth_failure', PAM),
  rule('User not known', String.raw`User not known to the underlying authentication module for (?<user>.*) from <HOST>${SUFF}$`, 'unknown_user', PAM),
  // publickey = nofail: a failed key of an invalid user is a failure, of a valid user a helper.
  rule('Failed publickey for invalid user ', String.raw`Failed publickey for invalid user (?<user>\S+) from <HOST>${ON_PORT}(?: ssh\d*)?: `, 'invalid_user', EACH),
  rule('Failed publickey for invalid user ', String.raw`Failed publickey for invalid user (?<user>(?:(?! from ).)*?) from <HOST>${ON_PORT}(?: ssh\d*)?${NO_FROM_TO_END}`, 'invalid_user', EACH),
  rule('Failed ', String.raw`${FAILED}invalid user (?<user>\S+) from <HOST>${ON_PORT}(?: ssh\d*)?: `, 'invalid_user', EACH),
  rule('Failed ', String.raw`${FAILED}invalid user (?<user>(?:(?! from ).)*?) from <HOST>${ON_PORT}(?: ssh\d*)?${NO_FROM_TO_END}`, 'invalid_user', EACH),
  rule('Failed ', String.raw`${FAILED}(?<user>\S+) from <HOST>${ON_PORT}(?: ssh\d*)?: `, 'auth_failure', EACH),
  rule('Failed ', String.raw`${FAILED}(?<user>[^:]+) from <HOST>${ON_PORT}(?: ssh\d*)?${NO_FROM_TO_END}`, 'auth_failure', EACH),
  rule('ROOT LOGIN REFUSED', String.raw`(?<user>ROOT) LOGIN REFUSED FROM <HOST>`, 'root_refused'),
  rule(['Illegal user ', 'illegal user ', 'Invalid user ', 'invalid user '], String.raw`[iI](?:llegal|nvalid) user (?<user>.*?) from <HOST>${SUFF}$`, 'invalid_user'),
  notAllowed('not listed in AllowUsers'),
  notAllowed('listed in DenyUsers'),
  notAllowed('not in any group'),
  rule('refused connect from ', String.raw`refused connect from \S+ \(<HOST>\)`, 'refused_connect'),
  rule('Received disconnect from ', String.raw`Received disconnect from <HOST>${ON_PORT}:\s*3: .*: Auth fail${SUFF}$`, 'auth_failure', { forget: true }),
  notAllowed('a group is listed in DenyGroups'),
  notAllowed("none of user's groups are listed in AllowGroups"),
  rule('pam_', String.raw`pam_[a-z]+\(sshd:auth\):\s+authentication failure;(?:\s+(?:(?:logname|e?uid|tty)=\S*)){0,4}\s+ruser=(?<ruser>\S*)\s+rhost=<HOST>(?:\s+user=(?<user>\S*))?${SUFF}$`, 'auth_failure', { nofail: true, ...PAM }),
  rule('maximum authentication attempts exceeded for ', String.raw`maximum authentication attempts exceeded for (?<user>.*) from <HOST>${ON_PORT}(?: ssh\d*)?${SUFF}$`, 'too_many_failures'),
  rule('User ', String.raw`User (?<user>\S+|.*?) not allowed because account is locked${SUFF}`, 'user_not_allowed'),
  rule('Disconnecting', String.raw`Disconnecting(?: from)?(?: (?:invalid|authenticating)) user (?<user>\S+) <HOST>${ON_PORT}:\s*Change of username or service not allowed:\s*.*\[preauth\]\s*$`, 'user_change', { forget: true, counts: 'more' }),
  rule('Disconnecting: Too many authentication failures', String.raw`Disconnecting: Too many authentication failures(?: for (?<user>\S+|.*?))?${SUFF}$`, 'too_many_failures'),
  rule('Received disconnect from ', String.raw`Received disconnect from <HOST>${ON_PORT}:\s*11:`, 'disconnect', { nofail: true, forget: true, counts: 'none' }),
];

const CLOSED = String.raw`(?:Connection (?:closed|reset)|Disconnected) (?:by|from)${AUTHNG_USER} <HOST>`;
const closedLeads = ['Connection closed ', 'Connection reset ', 'Disconnected '];

const normalOther: SshRule[] = [rule(closedLeads, String.raw`${CLOSED}(?:${SUFF}|\s*)$`, 'preauth_disconnect', { nofail: true, forget: true })];

const aggressiveOther: SshRule[] = [
  rule(closedLeads, String.raw`${CLOSED}${ON_PORT}\s+\[preauth\]\s*$`, 'preauth_disconnect', { forget: true }),
  rule(closedLeads, String.raw`${CLOSED}(?:${ON_PORT}|\s*)$`, 'preauth_disconnect', { nofail: true, forget: true }),
];

const accepted = rule('Accepted ', String.raw`Accepted \w+ for (?<user>\S+) from <HOST>(?:\s|$)`, 'login_after_failures', { forget: true, gained: true, counts: 'none' });

const ddos: SshRule[] = [
  rule('Did not receive identification string from ', String.raw`Did not receive identification string from <HOST>`, 'scan'),
  rule('kex_exchange_identification: ', String.raw`kex_exchange_identification: (?:read: )?(?:[Cc]lient sent invalid protocol identifier|[Cc]onnection (?:closed by remote host|reset by peer))`, 'scan'),
  rule('Bad protocol version identification ', String.raw`Bad protocol version identification '.*' from <HOST>`, 'scan'),
  rule('SSH: Server;Ltype:', String.raw`SSH: Server;Ltype: (?:Authname|Version|Kex);Remote: <HOST>-\d+;[A-Z]\w+:`, 'scan', { nofail: true, counts: 'none' }),
  rule('Read from socket failed: Connection reset by peer', String.raw`Read from socket failed: Connection reset by peer`, 'scan', { forget: true }),
  rule('banner exchange: Connection from ', String.raw`banner exchange: Connection from <HOST>${ON_PORT}: invalid format`, 'scan'),
];

const extra: SshRule[] = [
  rule('Received disconnect from ', String.raw`Received disconnect from <HOST>${ON_PORT}:\s*14: No(?: supported)? authentication methods available`, 'negotiation_failure', { forget: true }),
  rule('Unable to negotiate with ', String.raw`Unable to negotiate with <HOST>${ON_PORT}: no matching ${ALG} found.`, 'negotiation_failure'),
  rule('Unable to negotiate a ', String.raw`Unable to negotiate a ${ALG}`, 'negotiation_failure'),
  rule('no matching ', String.raw`no matching ${ALG} found:`, 'negotiation_failure'),
];

const footer = rule('Connection from ', String.raw`Connection from <HOST>`, 'connection', { nofail: true, counts: 'none' });

/** The ordered rule list of a mode (fail2ban's `failregex` for `mode = normal|aggressive`). */
export function sshRules(mode: DetectionMode): SshRule[] {
  return mode === 'aggressive'
    ? [...common, ...aggressiveOther, accepted, ...ddos, ...extra, footer]
    : [...common, ...normalOther, accepted, footer];
}

/** Rules indexed by the first character of their leads, order kept: the per-line prefilter. */
export function indexRules(rules: SshRule[]): Map<number, SshRule[]> {
  const index = new Map<number, SshRule[]>();
  for (const r of rules) {
    const firsts = new Set(r.leads.map((lead) => lead.charCodeAt(0)));
    for (const c of firsts) {
      const list = index.get(c) ?? [];
      list.push(r);
      index.set(c, list);
    }
  }
  return index;
}
