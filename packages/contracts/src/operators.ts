import { z } from 'zod';
import { OrgId, PageCursor, numberLike } from './primitives.ts';

/*
 * Beyond the specification: what an alliance operator (role 9) does from the API and the web
 * console instead of only the `rampart` CLI, and the audit log every such action writes
 * (`GET /audit`: organization admins see their organization's entries, operators every entry).
 */

/** Every action the audit log records. */
export const AUDIT_ACTIONS = [
  'organization.create',
  'organization.update',
  'organization.grant_coins',
  'organization.settings',
  'user.create',
  'key.create',
  'key.revoke',
  'decision.set',
  'decision.clear',
  'agent.register',
  'agent.configure',
  'agent.deactivate',
  'agent_key.issue',
  'agent_key.revoke',
] as const;

const PageSize = z.coerce.number().int().min(1).max(500).default(50).describe('Rows per page, 1 to 500 (default 50)');

export const MAX_DELAY_SECONDS = 31_536_000;
export const MAX_COIN_GRANT = 1_000_000_000_000;

export const OrgGidParams = z.strictObject({ gid: OrgId });

export const OperatorOrganization = z
  .object({
    gid: z.string(),
    name: z.string(),
    trust: z.number(),
    delay: z.int().describe('Seconds by which the organization sees new indicators late'),
    credit_tokens: z.number(),
    debit_tokens: z.number(),
    balance: z.number(),
    users: z.int(),
    created_at: z.string().describe('ISO 8601'),
  })
  .meta({ description: 'An organization as an operator sees it' });
export type OperatorOrganization = z.infer<typeof OperatorOrganization>;

export const OperatorOrgListQuery = z.strictObject({
  q: z.string().trim().min(1).max(200).optional().describe('Case-insensitive text the name must contain'),
  page_size: PageSize,
  page: PageCursor.optional(),
});
export type OperatorOrgListQuery = z.infer<typeof OperatorOrgListQuery>;

export const OperatorOrgListResponse = z.object({ items: z.array(OperatorOrganization), next_page: z.string().nullable() });
export type OperatorOrgListResponse = z.infer<typeof OperatorOrgListResponse>;

const Trust = numberLike(z.number().min(0).max(1)).describe('Trust level, 0 to 1');
const Delay = numberLike(z.int().min(0).max(MAX_DELAY_SECONDS)).describe(`Delay in seconds, 0 to ${MAX_DELAY_SECONDS}`);

export const OperatorOrgCreateBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    trust: Trust.prefault(0.5),
    delay: Delay.prefault(0),
    credits: numberLike(z.int().min(0).max(MAX_COIN_GRANT)).prefault(0).describe('Coins granted at creation'),
  })
  .meta({ description: 'A new organization' });

export const OperatorOrgPatchBody = z
  .strictObject({ trust: Trust.optional(), delay: Delay.optional() })
  .refine((b) => b.trust !== undefined || b.delay !== undefined, { message: 'give trust, delay or both' })
  .meta({ description: "Change an organization's trust and/or delay" });

export const OperatorCoinsBody = z
  .strictObject({
    amount: numberLike(z.int().min(1).max(MAX_COIN_GRANT)).describe('Coins added to credit_tokens'),
    note: z.string().trim().max(200).default('').describe('Why (kept in the audit log)'),
  })
  .meta({ description: 'Grant coins' });

export const OperatorUser = z
  .object({
    guid: z.string(),
    username: z.string(),
    name: z.string(),
    surname: z.string(),
    role: z.int(),
    unsuccessful_login: z.int(),
    created_at: z.string(),
  })
  .meta({ description: 'A user of an organization' });
export type OperatorUser = z.infer<typeof OperatorUser>;

export const AuditEntry = z
  .object({
    id: z.int(),
    at: z.string().describe('ISO 8601'),
    actor: z.string().describe('Who acted: a username, `agent:<gaid>` for an agent key, `cli:<account>` for the host CLI'),
    actor_key: z.string().describe('Id of the API or agent key used; empty from the CLI'),
    actor_organization: z.string().nullable().describe('Organization gid of who acted'),
    organization: z.string().nullable().describe('Organization gid acted on'),
    action: z.string().describe(`What: ${AUDIT_ACTIONS.join(', ')}`),
    target: z.string().describe('The object acted on'),
    detail: z.record(z.string(), z.unknown()).describe('What changed'),
    address: z.string().describe('Client address the request came from'),
  })
  .meta({ description: 'One entry of the audit log' });
export type AuditEntry = z.infer<typeof AuditEntry>;

const AuditFilters = {
  organization: OrgId.optional().describe('Operators: only entries about this organization (admins always see only their own)'),
  action: z.string().trim().min(1).max(64).optional().describe('Only this action (exact), or every action under a prefix ending in `.` (`decision.`)'),
  actor: z.string().trim().min(1).max(200).optional().describe('Only entries by this actor (exact: a username, `agent:<gaid>`, `cli:<account>`)'),
  since: z.iso.datetime({ offset: true }).optional().describe('Only entries at or after this time (ISO 8601)'),
  until: z.iso.datetime({ offset: true }).optional().describe('Only entries before this time (ISO 8601)'),
};

export const AuditQuery = z.strictObject({ ...AuditFilters, page_size: PageSize, page: PageCursor.optional() });
export type AuditQuery = z.infer<typeof AuditQuery>;

export const AuditListResponse = z.object({ items: z.array(AuditEntry), next_page: z.string().nullable() }).meta({ description: 'Audit log entries, newest first' });
export type AuditListResponse = z.infer<typeof AuditListResponse>;

/** Most entries one export carries (narrow the filters for more). */
export const MAX_AUDIT_EXPORT = 100_000;

export const AuditExportQuery = z
  .strictObject({ ...AuditFilters, format: z.enum(['csv', 'json']).default('json').describe('csv: a header line then one line per entry (detail as JSON); json: an array of entries') })
  .meta({ description: `Every matching entry, newest first (at most ${MAX_AUDIT_EXPORT})` });
export type AuditExportQuery = z.infer<typeof AuditExportQuery>;

/** Columns of the CSV export, in order. */
export const AUDIT_CSV_COLUMNS = ['id', 'at', 'actor', 'actor_key', 'actor_organization', 'organization', 'action', 'target', 'address', 'detail'] as const;
