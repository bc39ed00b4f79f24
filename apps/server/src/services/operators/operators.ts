import { ApiError, ID_PREFIX, type OperatorOrganization, type OperatorOrgListQuery } from '@rampart/contracts';
import type { AuditActor, Organization, OrganizationSummaryRow, Store } from '../../store/index.ts';
import type { CursorCodec } from '../cursor.ts';
import { delaySeconds } from '../envelope.ts';
import { randomIdPart } from '../ids.ts';

/*
 * Alliance operators (role 9) manage organizations from the API; every change is written with
 * its audit entry (store/operators.ts); the log itself is read through services/operators/audit.ts.
 */

export interface OperatorDeps {
  store: Store;
  cursors: CursorCodec;
}

function orgView(org: Organization & { users?: number; created_at?: string }, users: number, createdAt: string): OperatorOrganization {
  const credit = Number(org.credit_tokens);
  const debit = Number(org.debit_tokens);
  return { gid: org.gid, name: org.name, trust: Number(org.trust), delay: delaySeconds(org), credit_tokens: credit, debit_tokens: debit, balance: credit - debit, users, created_at: createdAt };
}

const summary = (r: OrganizationSummaryRow) => orgView(r, r.users, r.created_at);

export async function listOrganizations(deps: OperatorDeps, query: OperatorOrgListQuery): Promise<{ items: OperatorOrganization[]; next_page: string | null }> {
  const filters = { scope: 'operator.organizations', q: query.q ?? null };
  const afterId = query.page ? deps.cursors.decode<number>(query.page, filters) : null;
  const rows = await deps.store.operators.organizations({ text: query.q ?? null, afterId, limit: query.page_size + 1 });
  const page = rows.slice(0, query.page_size);
  const last = page.at(-1);
  return { items: page.map(summary), next_page: rows.length > query.page_size && last ? deps.cursors.encode(filters, last.id) : null };
}

async function organizationSummary(store: Store, gid: string): Promise<OperatorOrganization> {
  const [row] = await store.operators.organizations({ text: null, afterId: null, limit: 1, gid });
  if (!row) throw new ApiError('not_found', `no organization ${gid}`);
  return summary(row);
}

export async function createOrganization(store: Store, actor: AuditActor, body: { name: string; trust: number; delay: number; credits: number }): Promise<OperatorOrganization> {
  const created = await store.operators.createOrganization({ gid: `${ID_PREFIX.org}${randomIdPart()}`, name: body.name, trust: body.trust, delay: String(body.delay), credits: body.credits }, actor);
  if (created === 'exists') throw new ApiError('conflict', `an organization named "${body.name}" exists`, { errors: [{ path: 'body.name', message: 'already taken' }] });
  return organizationSummary(store, created.gid);
}

export async function grantCoins(store: Store, actor: AuditActor, gid: string, amount: number, note: string): Promise<OperatorOrganization> {
  if (!(await store.operators.grantCoins(gid, amount, note, actor))) throw new ApiError('not_found', `no organization ${gid}`);
  return organizationSummary(store, gid);
}

export async function updateOrganization(store: Store, actor: AuditActor, gid: string, change: { trust?: number | undefined; delay?: number | undefined }): Promise<OperatorOrganization> {
  const updated = await store.operators.update(gid, { trust: change.trust, delay: change.delay === undefined ? undefined : String(change.delay) }, actor);
  if (!updated) throw new ApiError('not_found', `no organization ${gid}`);
  return organizationSummary(store, gid);
}

export async function organizationOf(store: Store, gid: string): Promise<Organization> {
  const org = await store.orgs.byGid(gid);
  if (!org) throw new ApiError('not_found', `no organization ${gid}`);
  return org;
}
