import { OrganizationConfig } from '@rampart/contracts';
import type { Db, Queryable } from './db.ts';

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

export class SettingsStore {
  constructor(private readonly db: Db) {}

  /** The organization document with every default filled in (the defaults when never saved). */
  async organization(orgId: number, q: Queryable = this.db): Promise<{ document: OrganizationConfig; version: number }> {
    const res = await q.query<{ document: unknown; version: number }>('select document, version from organization_settings where org_id = $1', [orgId]);
    const row = res.rows[0];
    return { document: OrganizationConfig.parse(row?.document ?? {}), version: row?.version ?? 0 };
  }

  /**
   * Replaces the document with `build(current)` and records the change, in one transaction
   * with the row locked; returns the new document and version.
   */
  async replaceOrganization(
    orgId: number,
    build: (current: OrganizationConfig) => OrganizationConfig,
    changedBy: string,
  ): Promise<{ document: OrganizationConfig; version: number }> {
    return this.db.transaction(async (tx) => {
      // Locks the row (or, before the first save, the organization) against a concurrent replace.
      await tx.query('select 1 from organizations where id = $1 for update', [orgId]);
      const current = await this.organization(orgId, tx);
      const document = build(current.document);
      const res = await tx.query<{ version: number }>(
        `insert into organization_settings (org_id, document, version, updated_by) values ($1, $2, 1, $3)
         on conflict (org_id) do update set document = excluded.document, version = organization_settings.version + 1,
           updated_at = now(), updated_by = excluded.updated_by
         returning version`,
        [orgId, JSON.stringify(document), changedBy],
      );
      const version = res.rows[0]!.version;
      await recordAudit(tx, { orgId, subject: 'organization', version, changedBy, fields: changedPaths(current.document, document) });
      return { document, version };
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
