import { OrganizationConfig } from '@rampart/contracts';
import type { Db, Queryable, Transaction } from './db.ts';

export interface AuditEntry {
  id: number;
  subject: string;
  version: number;
  changed_by: string;
  changed_at: string;
  changed_fields: string[];
}

/** Dotted paths of the leaves that differ between two JSON documents (for the audit). */
export function changedPaths(before: unknown, after: unknown, prefix = ''): string[] {
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObj(before) && isObj(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((k) => changedPaths(before[k], after[k], prefix ? `${prefix}.${k}` : k));
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [prefix || '(document)'];
}

export interface AuditInput {
  orgId: number;
  subject: string;
  version: number;
  changedBy: string;
  /** Paths only: values (secrets among them) never reach the audit. */
  fields: string[];
}

export async function recordAudit(q: Queryable, e: AuditInput): Promise<void> {
  await q.query('insert into settings_audit (org_id, subject, version, changed_by, changed_fields) values ($1, $2, $3, $4, $5)', [
    e.orgId,
    e.subject,
    e.version,
    e.changedBy,
    e.fields,
  ]);
}

/** How long a cached organization document is trusted when no change notification arrives. */
const CACHE_MS = 5_000;
const CACHE_MAX = 10_000;

export class SettingsStore {
  private readonly cached = new Map<number, { value: { document: OrganizationConfig; version: number }; until: number }>();
  /** Moves on every forget: a read that started before it must not refill the cache. */
  private generation = 0;

  constructor(private readonly db: Db) {}

  /** `organizationCached` without a promise: the cached document, or undefined when none is cached now. */
  organizationIfCached(orgId: number): { document: OrganizationConfig; version: number } | undefined {
    const hit = this.cached.get(orgId);
    return hit && hit.until > Date.now() ? hit.value : undefined;
  }

  /**
   * `organization(orgId)` for the hot read paths (look-ups, lists, feeds): served from this
   * replica's memory. A replace through this store forgets the entry before it returns; other
   * replicas forget it on the settings_changed notification (app.ts), and no entry lives longer
   * than 5 s in any case. The result is shared: callers must not modify it.
   */
  async organizationCached(orgId: number): Promise<{ document: OrganizationConfig; version: number }> {
    const hit = this.organizationIfCached(orgId);
    if (hit) return hit;
    const generation = this.generation;
    const value = await this.organization(orgId);
    if (generation === this.generation) {
      if (this.cached.size >= CACHE_MAX) this.cached.clear();
      this.cached.set(orgId, { value, until: Date.now() + CACHE_MS });
    }
    return value;
  }

  /** Drops the cached document of one organization (or of all). */
  forget(orgId?: number): void {
    this.generation += 1;
    if (orgId === undefined) this.cached.clear();
    else this.cached.delete(orgId);
  }

  /** The organization document with every default filled in (the defaults when never saved). */
  async organization(orgId: number, q: Queryable = this.db): Promise<{ document: OrganizationConfig; version: number }> {
    const res = await q.query<{ document: unknown; version: number }>('select document, version from organization_settings where org_id = $1', [orgId]);
    const row = res.rows[0];
    return { document: OrganizationConfig.parse(row?.document ?? {}), version: row?.version ?? 0 };
  }

  /**
   * Replaces the document with `build(current)` and records the change, in one transaction
   * with the row locked; returns the new document and version. A document equal to the current
   * one changes nothing (`changed: false`, same version, no history entry).
   */
  async replaceOrganization(
    orgId: number,
    build: (current: OrganizationConfig) => OrganizationConfig,
    changedBy: string,
    alsoInTransaction?: (tx: Transaction, before: OrganizationConfig, after: OrganizationConfig) => Promise<void>,
  ): Promise<{ document: OrganizationConfig; version: number; changed: boolean }> {
    try {
      return await this.replaceOrganizationTx(orgId, build, changedBy, alsoInTransaction);
    } finally {
      this.forget(orgId);
    }
  }

  private replaceOrganizationTx(
    orgId: number,
    build: (current: OrganizationConfig) => OrganizationConfig,
    changedBy: string,
    alsoInTransaction?: (tx: Transaction, before: OrganizationConfig, after: OrganizationConfig) => Promise<void>,
  ): Promise<{ document: OrganizationConfig; version: number; changed: boolean }> {
    return this.db.transaction(async (tx) => {
      // Locks the row (or, before the first save, the organization) against a concurrent replace.
      await tx.query('select 1 from organizations where id = $1 for update', [orgId]);
      const current = await this.organization(orgId, tx);
      const document = build(current.document);
      const fields = changedPaths(current.document, document);
      // A save that changes nothing is no change: no new version, no empty history entry.
      if (fields.length === 0) return { ...current, changed: false };
      const res = await tx.query<{ version: number }>(
        `insert into organization_settings (org_id, document, version, updated_by) values ($1, $2, 1, $3)
         on conflict (org_id) do update set document = excluded.document, version = organization_settings.version + 1,
           updated_at = now(), updated_by = excluded.updated_by
         returning version`,
        [orgId, JSON.stringify(document), changedBy],
      );
      const version = res.rows[0]!.version;
      await recordAudit(tx, { orgId, subject: 'organization', version, changedBy, fields });
      await alsoInTransaction?.(tx, current.document, document);
      return { document, version, changed: true };
    });
  }

  async audit(q: Queryable, e: AuditInput): Promise<void> {
    await recordAudit(q, e);
  }

  /** Changes of one document, newest first; `changed_at` as ISO 8601 UTC. */
  async history(orgId: number, subject: string, limit = 100): Promise<AuditEntry[]> {
    const res = await this.db.query<Omit<AuditEntry, 'changed_at'> & { changed_ms: string | number }>(
      `select id, subject, version, changed_by, (extract(epoch from changed_at) * 1000)::bigint as changed_ms, changed_fields
       from settings_audit where org_id = $1 and subject = $2 order by id desc limit $3`,
      [orgId, subject, limit],
    );
    return res.rows.map(({ changed_ms, ...r }) => ({ ...r, id: Number(r.id), changed_at: new Date(Number(changed_ms)).toISOString() }));
  }
}
