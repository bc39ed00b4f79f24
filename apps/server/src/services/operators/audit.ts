import { userInfo } from 'node:os';
import { ApiError, AUDIT_CSV_COLUMNS, MAX_AUDIT_EXPORT, ROLE, type AuditExportQuery, type AuditListResponse, type AuditQuery } from '@rampart/contracts';
import type { AuditActor, AuditFilter, AuditRecord, AuditRow, Store } from '../../store/index.ts';
import type { Principal } from '../../plugins/principal.ts';
import type { CursorCodec } from '../cursor.ts';
import { csvField } from '../text-list.ts';

/*
 * The audit log (issue 23 item 6, issue 37 item 1): who changed what, in which organization,
 * from where and when. Every change of the API and of the `rampart` CLI writes one entry:
 * organizations, users, API keys, agent keys, agents, settings and decisions. Organization
 * admins read their organization's entries; alliance operators every entry.
 */

/** Who acted through the API: the user, or `agent:<gaid>` for an agent key; with the key used. */
export function auditActor(principal: Principal, address: string): AuditActor {
  const username = principal.agent ? `agent:${principal.agent.gaid}` : principal.user.username;
  return { userId: principal.user.id, username, orgId: principal.org.id, address, keyId: principal.keyId };
}

/** The `rampart` CLI on the server host: audited under the host account's name. */
export function cliActor(): AuditActor {
  let who = 'unknown';
  try {
    who = userInfo().username;
  } catch {
    // No passwd entry for the uid (containers): the entry still says it came from the CLI.
  }
  return { userId: null, username: `cli:${who}`, orgId: null, address: 'local (rampart CLI)' };
}

/** Writes one entry; `orgId` is the organization acted on. */
export function audit(store: Store, actor: AuditActor, entry: AuditRecord): Promise<void> {
  return store.operators.record(actor, entry);
}

export interface AuditDeps {
  store: Store;
  cursors: CursorCodec;
}

type Filters = Pick<AuditQuery, 'organization' | 'action' | 'actor' | 'since' | 'until'>;

/** The organization a caller may read: admins their own (a filter naming another is refused), operators any or all. */
async function scope(store: Store, principal: Principal, query: Filters): Promise<{ operator: boolean; filter: AuditFilter }> {
  const operator = principal.user.role >= ROLE.operator;
  if (!operator && query.organization !== undefined && query.organization !== principal.org.gid) {
    throw new ApiError('forbidden', 'an organization admin reads only its own organization audit log', { errors: [{ path: 'querystring.organization', message: 'not your organization' }] });
  }
  let orgId: number | null = operator ? null : principal.org.id;
  if (operator && query.organization !== undefined) {
    const org = await store.orgs.byGid(query.organization);
    if (!org) throw new ApiError('not_found', `no organization ${query.organization}`, { errors: [{ path: 'querystring.organization', message: 'no such organization' }] });
    orgId = org.id;
  }
  const since = query.since === undefined ? null : new Date(query.since).toISOString();
  const until = query.until === undefined ? null : new Date(query.until).toISOString();
  if (since !== null && until !== null && since >= until) {
    throw new ApiError('validation_failed', 'until must be later than since', { errors: [{ path: 'querystring.until', message: 'not after since' }] });
  }
  return { operator, filter: { orgId, action: query.action ?? null, actor: query.actor ?? null, since, until } };
}

/** One page, newest first; the cursor is bound to the viewer and the filters. */
export async function listAudit(deps: AuditDeps, principal: Principal, query: AuditQuery): Promise<AuditListResponse> {
  const { operator, filter } = await scope(deps.store, principal, query);
  const filters = { scope: 'audit', viewer: principal.org.gid, operator, organization: query.organization ?? null, action: filter.action, actor: filter.actor, since: filter.since, until: filter.until };
  const beforeId = query.page ? deps.cursors.decode<number>(query.page, filters) : null;
  const rows = await deps.store.operators.audit({ ...filter, beforeId, limit: query.page_size + 1 });
  const page = rows.slice(0, query.page_size);
  const last = page.at(-1);
  return { items: page, next_page: rows.length > query.page_size && last ? deps.cursors.encode(filters, last.id) : null };
}

/** A spreadsheet must not take a field for a formula: one starting with = + - @ or a control character gets a leading quote. */
function cell(value: string): string {
  return csvField(/^[=+\-@\t\r]/.test(value) ? `'${value}` : value);
}

export function auditCsv(rows: readonly AuditRow[]): string {
  const line = (r: AuditRow) =>
    AUDIT_CSV_COLUMNS.map((c) => {
      const v = c === 'detail' ? JSON.stringify(r.detail) : r[c];
      return v === null ? '' : typeof v === 'number' ? String(v) : cell(v);
    }).join(',');
  return [AUDIT_CSV_COLUMNS.join(','), ...rows.map(line)].join('\r\n') + '\r\n';
}

/** Every matching entry (at most MAX_AUDIT_EXPORT), newest first, read in pages. */
export async function exportAudit(store: Store, principal: Principal, query: AuditExportQuery): Promise<AuditRow[]> {
  const { filter } = await scope(store, principal, query);
  const rows: AuditRow[] = [];
  let beforeId: number | null = null;
  while (rows.length < MAX_AUDIT_EXPORT) {
    const limit = Math.min(5000, MAX_AUDIT_EXPORT - rows.length);
    const page = await store.operators.audit({ ...filter, beforeId, limit });
    rows.push(...page);
    if (page.length < limit) break;
    beforeId = page.at(-1)!.id;
  }
  return rows;
}
