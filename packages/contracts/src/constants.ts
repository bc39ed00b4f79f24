/** Service abbreviation: the `<svc>` of the specification, used in every identifier. */
export const SVC = 'RMP';

/** Base path of the API generation (spec 9.1). */
export const API_BASE = '/api/v1';

/** Prefixes of platform identifiers; the random part follows the prefix directly. */
export const ID_PREFIX = {
  user: `${SVC}-GUID-`,
  org: `${SVC}-GID-`,
  rule: `${SVC}-RULE-GID-`,
  vpn: `${SVC}-VID-LIC`,
  agent: `${SVC}-AGENT-ID-`,
} as const;

/** Field names that embed the service abbreviation (spec 2.9 and 2.11). */
export const VERSION_INSTANCE_KEY = `${SVC}_instance` as const;
export const PF_LIST_FILE_KEY = `${SVC}_ips_txt` as const;

/** Role codes; each role includes the rights of the roles below it, except operator. */
export const ROLE = {
  reader: 1,
  contributor: 2,
  admin: 3,
  operator: 9,
} as const;

export type RoleName = keyof typeof ROLE;
export type RoleCode = (typeof ROLE)[RoleName];

export const ROLE_DESCRIPTIONS: Record<RoleCode, string> = {
  1: 'reader: reads feeds, lists and single look-ups',
  2: 'contributor: reader rights plus reports and decisions',
  3: 'organization admin: contributor rights plus organization and agent settings, agents, VPN licenses and API keys',
  9: 'alliance operator: creates organizations, sets their trust and grants coins',
};

/** Placeholder that replaces a secret in every document returned to a client. */
export const SECRET_MASK = '********';
