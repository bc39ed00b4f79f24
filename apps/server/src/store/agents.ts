import { AgentSettingsDocument, REPORTED_PLUGIN_NAMES, type AgentCapabilities, type PluginState } from '@rampart/contracts';
import type { Db, Queryable } from './db.ts';
import type { UserRow } from './users.ts';
import type { Organization } from './organizations.ts';
import { changedPaths, recordAudit as audit } from './settings.ts';

/** How many entries under a key of the agent's configuration (not a fixed name) its record keeps. */
export const MAX_CONFIGURED_LABEL_ENTRIES = 64;

export type CheckinVia = 'ipv4' | 'feed' | 'feedback' | 'sync' | 'bouncer' | 'crowdsec_watcher';

/** What one enforcement plugin last said (feedback or sync `state`), kept per plugin. */
export interface EnforcedEntry {
  enforced: number | null;
  code: number | string | null;
  score_threshold: number | null;
  healthy: boolean | null;
  /** Absent in entries stored before issue 17. */
  state?: PluginState | null;
  error?: string | null;
  at: number;
  /** Attestation by read-back (issue 30); absent when the agent did not send it. */
  attestation?: StoredAttestation;
}

/** What the agent said its target held, and what the server expected of it at that report. */
export interface StoredAttestation {
  expected: number | null;
  held: number;
  held_digest: string | null;
  /** The server's list for the agent at the report (its threshold, its organization's view). */
  listed: number;
  server_expected: number;
  cut: number;
  /** Epoch seconds since held first differed from server_expected; null while they agree. */
  drift_since: number | null;
  /** The agent's reconcile interval as it reported it (seconds). */
  reconcile_seconds: number | null;
  /** The last difference that ended (a read-back agreed again): kept so that a repaired drift leaves a trace. */
  last_drift?: { since: number; until: number; held: number; server_expected: number } | null;
}

export interface AgentRow {
  id: number;
  org_id: number;
  gaid: string;
  document: AgentSettingsDocument;
  version: number;
  last_checkin_at: number | null;
  last_checkin_via: CheckinVia | null;
  enforced: Record<string, EnforcedEntry>;
  deactivated_at: number | null;
  reported_version: string | null;
  hostname: string | null;
  capabilities: AgentCapabilities | null;
}

export interface AgentTokenRow {
  jti: string;
  agent_id: number;
  issued_by: string | null;
  issued_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

/** Who a verified agent token acts as; null when the token, agent or issuer is gone or revoked. */
export interface AgentTokenPrincipal {
  agentId: number;
  gaid: string;
  org: Organization;
  authName: string | null;
  /** The admin who issued the token: reports the agent makes are attributed to this user. */
  issuer: UserRow;
}

const epoch = (column: string) => `floor(extract(epoch from ${column}))::bigint`;
const COLUMNS = `id, org_id, gaid, document, version, ${epoch('last_checkin_at')} as last_checkin_at, last_checkin_via,
  coalesce(enforced, '{}'::jsonb) as enforced, ${epoch('deactivated_at')} as deactivated_at, reported_version, hostname, capabilities`;

interface RawAgentRow extends Omit<AgentRow, 'document' | 'last_checkin_at' | 'deactivated_at'> {
  document: unknown;
  last_checkin_at: string | number | null;
  deactivated_at: string | number | null;
}

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));

function toRow(r: RawAgentRow): AgentRow {
  return {
    ...r,
    id: Number(r.id),
    org_id: Number(r.org_id),
    // Stored documents were validated on the way in; parsing again fills defaults added since.
    document: AgentSettingsDocument.parse(r.document),
    last_checkin_at: num(r.last_checkin_at),
    deactivated_at: num(r.deactivated_at),
  };
}

export class AgentStore {
  constructor(private readonly db: Db) {}

  /** Registers an agent; false when the gaid is already registered (by any organization). */
  async register(orgId: number, document: AgentSettingsDocument, changedBy: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const res = await tx.query(
        `insert into agents (org_id, gaid, document, version) values ($1, $2, $3, 1) on conflict (gaid) do nothing`,
        [orgId, document.gaid, JSON.stringify(document)],
      );
      if (res.rowCount === 0) return false;
      await audit(tx, { orgId, subject: agentSubject(document.gaid), version: 1, changedBy, fields: ['(created)'] });
      return true;
    });
  }

  /**
   * Registers many agents in one statement (provisioning, benchmarks); gaids already
   * registered are skipped. Returns the gaids that were inserted.
   */
  async registerMany(orgId: number, documents: readonly AgentSettingsDocument[], changedBy: string): Promise<string[]> {
    return this.db.transaction(async (tx) => {
      const res = await tx.query<{ gaid: string }>(
        `insert into agents (org_id, gaid, document, version)
         select $1, d->>'gaid', d, 1 from jsonb_array_elements($2::jsonb) d
         on conflict (gaid) do nothing returning gaid`,
        [orgId, JSON.stringify(documents)],
      );
      const gaids = res.rows.map((r) => r.gaid);
      await tx.query(
        `insert into settings_audit (org_id, subject, version, changed_by, changed_fields)
         select $1, 'agent:' || g, 1, $2, '{(created)}' from unnest($3::text[]) g`,
        [orgId, changedBy, gaids],
      );
      return gaids;
    });
  }

  /** One agent of this organization (other organizations' agents are not found). */
  async get(orgId: number, gaid: string, q: Queryable = this.db): Promise<AgentRow | undefined> {
    const res = await q.query<RawAgentRow>(`select ${COLUMNS} from agents where org_id = $1 and gaid = $2`, [orgId, gaid]);
    return res.rows[0] && toRow(res.rows[0]);
  }

  async list(orgId: number, limit = 10_000): Promise<AgentRow[]> {
    const res = await this.db.query<RawAgentRow>(`select ${COLUMNS} from agents where org_id = $1 order by gaid limit $2`, [orgId, limit]);
    return res.rows.map(toRow);
  }

  /**
   * Replaces the settings document with `build(stored)`, bumps its version and audits the
   * changed paths, in one transaction with the row locked (so `build` sees the document it
   * replaces). Undefined when the agent is not this organization's.
   */
  async replaceDocument(
    orgId: number,
    gaid: string,
    build: (stored: AgentSettingsDocument) => AgentSettingsDocument,
    changedBy: string,
  ): Promise<{ document: AgentSettingsDocument; version: number } | undefined> {
    return this.db.transaction(async (tx) => {
      const res = await tx.query<{ document: unknown }>('select document from agents where org_id = $1 and gaid = $2 for update', [orgId, gaid]);
      const before = res.rows[0]?.document;
      if (before === undefined) return undefined;
      const document = build(AgentSettingsDocument.parse(before));
      const updated = await tx.query<{ version: number }>(
        'update agents set document = $3, version = version + 1, updated_at = now() where org_id = $1 and gaid = $2 returning version',
        [orgId, gaid, JSON.stringify(document)],
      );
      const version = updated.rows[0]!.version;
      await audit(tx, { orgId, subject: agentSubject(gaid), version, changedBy, fields: changedPaths(before, document) });
      return { document, version };
    });
  }

  /** Marks an agent of this organization alive now; unknown or foreign agents are ignored. */
  async checkIn(orgId: number, gaid: string, via: CheckinVia, plugin?: string): Promise<boolean> {
    const res = await this.db.query(
      `update agents set last_checkin_at = now(), last_checkin_via = $3, last_plugin = coalesce($4, last_plugin)
       where org_id = $1 and gaid = $2`,
      [orgId, gaid, via, plugin ?? null],
    );
    return res.rowCount > 0;
  }

  /** One statement for many agents (the sync hub batches the check-ins of its connections). */
  async checkInMany(agentIds: readonly number[], via: CheckinVia): Promise<void> {
    if (agentIds.length === 0) return;
    await this.db.query('update agents set last_checkin_at = now(), last_checkin_via = $2 where id = any($1::bigint[])', [agentIds, via]);
  }

  /**
   * Records what the agent reports it enforces (merged per plugin) and counts as a check-in.
   * False when the agent is not this organization's. Entries under the fixed names are kept; of
   * those under other names (keys of the agent's configuration, checked by the caller) only the
   * MAX_CONFIGURED_LABEL_ENTRIES newest, the ones just written first: the record stays bounded
   * however many keys a configuration holds or however often it changes.
   */
  async recordEnforcement(
    orgId: number,
    gaid: string,
    via: CheckinVia,
    report: {
      plugins: Record<string, EnforcedEntry>;
      hostname?: string | undefined;
      version?: string | undefined;
      capabilities?: AgentCapabilities | undefined;
    },
  ): Promise<boolean> {
    const plugins = Object.keys(report.plugins);
    const res = await this.db.query(
      `update agents set last_checkin_at = now(), last_checkin_via = $3,
         enforced = (
           select coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb) from (
             select key, value, key = any($9::text[]) as fixed,
               row_number() over (partition by key = any($9::text[]) order by $4::jsonb ? key desc, (value->>'at')::bigint desc nulls last, key) as newest
             from jsonb_each(coalesce(enforced, '{}'::jsonb) || $4::jsonb)
           ) e where e.fixed or e.newest <= $10),
         last_plugin = coalesce($5, last_plugin),
         hostname = coalesce($6, hostname),
         reported_version = coalesce($7, reported_version),
         capabilities = coalesce($8::jsonb, capabilities)
       where org_id = $1 and gaid = $2`,
      [
        orgId,
        gaid,
        via,
        JSON.stringify(report.plugins),
        plugins.at(-1) ?? null,
        report.hostname ?? null,
        report.version ?? null,
        report.capabilities ? JSON.stringify(report.capabilities) : null,
        REPORTED_PLUGIN_NAMES,
        MAX_CONFIGURED_LABEL_ENTRIES,
      ],
    );
    return res.rowCount > 0;
  }

  /**
   * Active agents (of every organization) with some enforcer whose read-back differed from the
   * server's figure at its last report: the candidates for `rampart_agents_drifting`.
   */
  async withDriftSince(limit = 100_000): Promise<{ org_gid: string; row: AgentRow }[]> {
    const res = await this.db.query<RawAgentRow & { org_gid: string }>(
      `select c.*, o.gid as org_gid from (
         select ${COLUMNS} from agents
         where deactivated_at is null
           and exists (select 1 from jsonb_each(coalesce(enforced, '{}'::jsonb)) e where e.value #>> '{attestation,drift_since}' is not null)
         order by id limit $1) c join organizations o on o.id = c.org_id`,
      [limit],
    );
    return res.rows.map(({ org_gid, ...r }) => ({ org_gid, row: toRow(r) }));
  }

  /**
   * Agents of every organization (or one), by id after `afterId`, with their organization's gid
   * and name, and their key counts: one page of the operators' alliance view.
   */
  async allianceAgents(q: { afterId: number | null; orgGid: string | null; limit: number }): Promise<{ org_gid: string; org_name: string; keys: { issued: number; live: number }; row: AgentRow }[]> {
    const res = await this.db.query<RawAgentRow & { org_gid: string; org_name: string; issued: number; live: number }>(
      `select c.*, o.gid as org_gid, o.name as org_name,
         (select count(*)::int from agent_tokens t where t.agent_id = c.id) as issued,
         (select count(*)::int from agent_tokens t where t.agent_id = c.id and t.revoked_at is null
            and (t.expires_at is null or t.expires_at > now()) and c.deactivated_at is null) as live
       from (select ${COLUMNS} from agents
             where ($1::bigint is null or id > $1::bigint)
               and ($2::text is null or org_id = (select id from organizations where gid = $2::text))
             order by id limit $3) c
       join organizations o on o.id = c.org_id order by c.id`,
      [q.afterId, q.orgGid, q.limit],
    );
    return res.rows.map(({ org_gid, org_name, issued, live, ...r }) => ({ org_gid, org_name, keys: { issued: Number(issued), live: Number(live) }, row: toRow(r) }));
  }

  /** Deactivates an agent: every token it holds stops working. */
  async deactivate(orgId: number, gaid: string): Promise<boolean> {
    const res = await this.db.query('update agents set deactivated_at = coalesce(deactivated_at, now()) where org_id = $1 and gaid = $2', [orgId, gaid]);
    return res.rowCount > 0;
  }

  async recordToken(t: { jti: string; agentId: number; issuedBy: number; expiresAt: number | null }): Promise<void> {
    await this.db.query('insert into agent_tokens (jti, agent_id, issued_by, expires_at) values ($1, $2, $3, to_timestamp($4))', [
      t.jti,
      t.agentId,
      t.issuedBy,
      t.expiresAt,
    ]);
  }

  async recordTokens(tokens: readonly { jti: string; agentId: number; issuedBy: number }[]): Promise<void> {
    await this.db.query(
      `insert into agent_tokens (jti, agent_id, issued_by)
       select t->>'jti', (t->>'agentId')::bigint, (t->>'issuedBy')::bigint from jsonb_array_elements($1::jsonb) t`,
      [JSON.stringify(tokens)],
    );
  }

  async tokens(agentId: number, limit = 1000): Promise<AgentTokenRow[]> {
    const res = await this.db.query<AgentTokenRow>(
      `select t.jti, t.agent_id, u.username as issued_by, ${epoch('t.issued_at')} as issued_at,
         ${epoch('t.expires_at')} as expires_at, ${epoch('t.revoked_at')} as revoked_at
       from agent_tokens t left join users u on u.id = t.issued_by
       where t.agent_id = $1 order by t.issued_at desc, t.jti limit $2`,
      [agentId, limit],
    );
    return res.rows.map((r) => ({ ...r, issued_at: Number(r.issued_at), expires_at: num(r.expires_at), revoked_at: num(r.revoked_at) }));
  }

  /** Per agent id of the organization: keys ever issued, and those that work now (neither revoked nor expired, the agent active). */
  async keyCounts(orgId: number): Promise<Map<number, { issued: number; live: number }>> {
    const res = await this.db.query<{ agent_id: number; issued: number; live: number }>(
      `select t.agent_id, count(*)::int as issued,
         (count(*) filter (where t.revoked_at is null and (t.expires_at is null or t.expires_at > now()) and a.deactivated_at is null))::int as live
       from agent_tokens t join agents a on a.id = t.agent_id where a.org_id = $1 group by t.agent_id`,
      [orgId],
    );
    return new Map(res.rows.map((r) => [Number(r.agent_id), { issued: Number(r.issued), live: Number(r.live) }]));
  }

  /** Revokes one token of one agent; false when there is no such unrevoked token. */
  async revokeToken(agentId: number, jti: string): Promise<boolean> {
    const res = await this.db.query('update agent_tokens set revoked_at = now() where agent_id = $1 and jti = $2 and revoked_at is null', [agentId, jti]);
    return res.rowCount > 0;
  }

  /** The agent a token id stands for, when the token, its agent and its issuer are all still valid. */
  async tokenPrincipal(jti: string): Promise<AgentTokenPrincipal | undefined> {
    const res = await this.db.query<UserRow & { agent_id: number; gaid: string; auth_name: string | null; org: Organization }>(
      // The issuer's organization is compared below, not in SQL: equating u.org_id with a.org_id
      // lets the planner reach agents through agents_org_idx when statistics are stale (PGlite
      // has no autovacuum), scanning every agent of the organization.
      `select a.id as agent_id, a.gaid, a.document->>'auth_name' as auth_name,
         u.id, u.guid, u.org_id, u.name, u.surname, u.username, u.role, u.unsuccessful_login,
         json_build_object('id', o.id, 'gid', o.gid, 'name', o.name, 'trust', o.trust, 'delay', o.delay,
           'credit_tokens', o.credit_tokens, 'debit_tokens', o.debit_tokens, 'is_public', o.is_public) as org
       from agent_tokens t join agents a on a.id = t.agent_id join users u on u.id = t.issued_by
         join organizations o on o.id = a.org_id
       where t.jti = $1 and t.revoked_at is null and (t.expires_at is null or t.expires_at > now()) and a.deactivated_at is null`,
      [jti],
    );
    const r = res.rows[0];
    if (!r) return undefined;
    const { agent_id, gaid, auth_name, org, ...issuer } = r;
    // An issuer who moved to another organization no longer vouches for the agent.
    if (Number(issuer.org_id) !== Number(org.id)) return undefined;
    return {
      agentId: Number(agent_id),
      gaid,
      org: { ...org, id: Number(org.id), credit_tokens: Number(org.credit_tokens), debit_tokens: Number(org.debit_tokens) },
      authName: auth_name,
      issuer: { ...issuer, id: Number(issuer.id), org_id: Number(issuer.org_id) },
    };
  }

  /** Newest `ts` of each feed: the feed cursor given to agents when they connect. */
  async feedHead(): Promise<{ ipv4: number; file: number; domain: number; url: number }> {
    const res = await this.db.query<{ ipv4: number; file: number; domain: number; url: number }>(
      `select (select coalesce(max(ts), 0) from ipv4_indicators) as ipv4,
              (select coalesce(max(ts), 0) from file_indicators) as file,
              (select coalesce(max(ts), 0) from domain_indicators) as domain,
              (select coalesce(max(ts), 0) from url_indicators) as url`,
    );
    const r = res.rows[0]!;
    return { ipv4: Number(r.ipv4), file: Number(r.file), domain: Number(r.domain), url: Number(r.url) };
  }
}

export function agentSubject(gaid: string): string {
  return `agent:${gaid}`;
}
