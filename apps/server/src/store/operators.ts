import type { Db, Queryable } from './db.ts';
import type { Organization } from './organizations.ts';

/** Who acted and from where: written with the action, in its transaction. */
export interface AuditActor {
  /** null: the `rampart` CLI on the server host (no API user). */
  userId: number | null;
  username: string;
  orgId: number | null;
  address: string;
  /** The API or agent key used (empty from the CLI). */
  keyId?: string;
}

export interface AuditRecord {
  orgId: number | null;
  action: string;
  target: string;
  detail: Record<string, unknown>;
}

export interface AuditRow {
  id: number;
  at: string;
  actor: string;
  actor_key: string;
  actor_organization: string | null;
  organization: string | null;
  action: string;
  target: string;
  detail: Record<string, unknown>;
  address: string;
}

export interface AuditFilter {
  orgId: number | null;
  action: string | null;
  actor?: string | null;
  /** ISO 8601 */
  since?: string | null;
  until?: string | null;
}

export interface OrganizationSummaryRow extends Organization {
  users: number;
  created_at: string;
}

const ORG_COLUMNS = 'o.id, o.gid, o.name, o.trust, o.delay, o.credit_tokens, o.debit_tokens, o.is_public';

export async function writeAudit(q: Queryable, actor: AuditActor, entry: AuditRecord): Promise<void> {
  await q.query(
    `insert into audit_log (actor_user_id, actor, actor_org_id, org_id, action, target, detail, address, actor_key) values ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9)`,
    [actor.userId, actor.username, actor.orgId, entry.orgId, entry.action, entry.target, JSON.stringify(entry.detail), actor.address, actor.keyId ?? ''],
  );
}

/**
 * Alliance operators' changes to organizations, each written with its audit entry in one
 * transaction (an action is never without its entry, nor an entry without its action), and the
 * audit log itself, newest first in id order.
 */
export class OperatorStore {
  constructor(private readonly db: Db) {}

  async organizations(q: { text: string | null; afterId: number | null; limit: number; gid?: string }): Promise<OrganizationSummaryRow[]> {
    const res = await this.db.query<OrganizationSummaryRow>(
      `select ${ORG_COLUMNS}, o.created_at, (select count(*)::int from users u where u.org_id = o.id) as users
       from organizations o
       where ($1::text is null or strpos(lower(o.name), lower($1::text)) > 0) and ($2::bigint is null or o.id > $2::bigint)
         and ($4::text is null or o.gid = $4::text)
       order by o.id limit $3`,
      [q.text, q.afterId, q.limit, q.gid ?? null],
    );
    return res.rows.map((r) => ({ ...r, id: Number(r.id), users: Number(r.users), created_at: new Date(r.created_at).toISOString() }));
  }

  async createOrganization(input: { gid: string; name: string; trust: number; delay: string; credits: number }, actor: AuditActor): Promise<Organization | 'exists'> {
    return this.db.transaction(async (tx) => {
      const res = await tx.query<Organization>(
        `insert into organizations (gid, name, trust, delay, credit_tokens) values ($1, $2, $3, $4, $5)
         on conflict (name) do nothing returning id, gid, name, trust, delay, credit_tokens, debit_tokens, is_public`,
        [input.gid, input.name, input.trust, input.delay, input.credits],
      );
      const org = res.rows[0];
      if (!org) return 'exists';
      await writeAudit(tx, actor, { orgId: org.id, action: 'organization.create', target: org.gid, detail: { name: input.name, trust: input.trust, delay: input.delay, credits: input.credits } });
      return org;
    });
  }

  async grantCoins(gid: string, amount: number, note: string, actor: AuditActor): Promise<Organization | undefined> {
    return this.db.transaction(async (tx) => {
      const res = await tx.query<Organization>(
        `update organizations set credit_tokens = credit_tokens + $2 where gid = $1 returning id, gid, name, trust, delay, credit_tokens, debit_tokens, is_public`,
        [gid, amount],
      );
      const org = res.rows[0];
      if (!org) return undefined;
      await writeAudit(tx, actor, { orgId: org.id, action: 'organization.grant_coins', target: gid, detail: { amount, note, credit_tokens: Number(org.credit_tokens) } });
      return org;
    });
  }

  /** Sets trust and/or delay; the audit entry holds both values before and after. */
  async update(gid: string, change: { trust?: number | undefined; delay?: string | undefined }, actor: AuditActor): Promise<Organization | undefined> {
    return this.db.transaction(async (tx) => {
      const before = await tx.query<{ id: number; trust: number; delay: string }>('select id, trust, delay from organizations where gid = $1 for update', [gid]);
      const was = before.rows[0];
      if (!was) return undefined;
      const res = await tx.query<Organization>(
        `update organizations set trust = coalesce($2::float8, trust), delay = coalesce($3::text, delay) where gid = $1
         returning id, gid, name, trust, delay, credit_tokens, debit_tokens, is_public`,
        [gid, change.trust ?? null, change.delay ?? null],
      );
      const org = res.rows[0]!;
      const detail: Record<string, unknown> = {};
      if (change.trust !== undefined) detail.trust = { from: Number(was.trust), to: Number(org.trust) };
      if (change.delay !== undefined) detail.delay = { from: was.delay, to: org.delay };
      await writeAudit(tx, actor, { orgId: org.id, action: 'organization.update', target: gid, detail });
      return org;
    });
  }

  async users(orgId: number, limit: number): Promise<Array<{ guid: string; username: string; name: string; surname: string; role: number; unsuccessful_login: number; created_at: string }>> {
    const res = await this.db.query<{ guid: string; username: string; name: string; surname: string; role: number; unsuccessful_login: number; created_at: string }>(
      'select guid, username, name, surname, role, unsuccessful_login, created_at from users where org_id = $1 order by id limit $2',
      [orgId, limit],
    );
    return res.rows.map((r) => ({ ...r, role: Number(r.role), unsuccessful_login: Number(r.unsuccessful_login), created_at: new Date(r.created_at).toISOString() }));
  }

  /**
   * Audit entries, newest first; `orgId` null: every organization's (operators). `action` is
   * exact, or a prefix when it ends in `.`; `since` inclusive, `until` exclusive.
   */
  async audit(q: AuditFilter & { beforeId: number | null; limit: number }): Promise<AuditRow[]> {
    const res = await this.db.query<AuditRow>(
      `select a.id, a.at, a.actor, a.actor_key, ao.gid as actor_organization, o.gid as organization, a.action, a.target, a.detail, a.address
       from audit_log a left join organizations o on o.id = a.org_id left join organizations ao on ao.id = a.actor_org_id
       where ($1::bigint is null or a.org_id = $1::bigint)
         and ($2::text is null or a.action = $2::text or (right($2::text, 1) = '.' and left(a.action, length($2::text)) = $2::text))
         and ($3::bigint is null or a.id < $3::bigint)
         and ($5::text is null or a.actor = $5::text)
         and ($6::timestamptz is null or a.at >= $6::timestamptz)
         and ($7::timestamptz is null or a.at < $7::timestamptz)
       order by a.id desc limit $4`,
      [q.orgId, q.action, q.beforeId, q.limit, q.actor ?? null, q.since ?? null, q.until ?? null],
    );
    return res.rows.map((r) => ({ ...r, id: Number(r.id), at: new Date(r.at).toISOString() }));
  }

  /** One audit entry outside an operator action (a key, a decision, an agent, a user). */
  record(actor: AuditActor, entry: AuditRecord): Promise<void> {
    return writeAudit(this.db, actor, entry);
  }
}
