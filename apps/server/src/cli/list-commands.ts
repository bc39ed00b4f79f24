import { InvalidArgumentError, type Command } from 'commander';
import { ApiError, ROLE } from '@rampart/contracts';
import { loadConfig } from '../config.ts';
import { stateOf } from '../services/agents/summary.ts';
import { delaySeconds } from '../services/envelope.ts';
import { openStore, type BrowseKind, type Organization, type Store } from '../store/index.ts';

/*
 * `rampart org|user|key|agent|decision list`: what the store holds, as an aligned table (one
 * row per line, columns two spaces apart, `-` for none) or, with `--json`, as a JSON array of
 * the same rows. Read-only, so they are safe next to running servers on PostgreSQL; on the
 * embedded store they need the server stopped like every other command (one process at a time).
 */

/** A JSON cell: numbers as numbers, times as ISO 8601 UTC, a role as `{id, name}` (its name in a table). */
export type Cell = string | number | boolean | null | { id: number; name: string };
export type Row = Record<string, Cell>;

/** Columns named by their keys in upper case; each as wide as its widest cell; no trailing blanks. */
export function formatTable(rows: readonly Row[], columns: readonly string[]): string {
  const text = (v: Cell) => (v === null || v === '' ? '-' : typeof v === 'object' ? v.name : String(v));
  const lines = [columns.map((c) => c.toUpperCase()), ...rows.map((r) => columns.map((c) => text(r[c] ?? null)))];
  const widths = columns.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  return lines.map((l) => l.map((cell, i) => (i === l.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

const iso = (epochSeconds: number | null) => (epochSeconds === null ? null : new Date(epochSeconds * 1000).toISOString());
const isoDate = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
/** A role as the CLI prints it: `{id, name}` (the API's code and its name). */
export function roleOf(code: number): { id: number; name: string } {
  const name = (Object.entries(ROLE) as Array<[string, number]>).find(([, id]) => id === code)?.[0];
  return { id: code, name: name ?? String(code) };
}

async function orgOf(store: Store, gid: string): Promise<Organization> {
  const org = await store.orgs.byGid(gid);
  if (!org) throw new ApiError('not_found', `no organization ${gid}`);
  return org;
}

export async function listOrgs(store: Store): Promise<Row[]> {
  const rows: Row[] = [];
  for (let afterId: number | null = null; ; ) {
    const page = await store.operators.organizations({ text: null, afterId, limit: 1000 });
    for (const o of page) {
      const credit = Number(o.credit_tokens);
      const debit = Number(o.debit_tokens);
      rows.push({ gid: o.gid, name: o.name, trust: Number(o.trust), delay: delaySeconds(o), balance: credit - debit, users: o.users, created_at: o.created_at });
    }
    if (page.length < 1000) return rows;
    afterId = page.at(-1)!.id;
  }
}

export async function listUsers(store: Store, gid: string): Promise<Row[]> {
  const org = await orgOf(store, gid);
  return (await store.operators.users(org.id, 100_000)).map((u) => ({
    guid: u.guid,
    username: u.username,
    role: roleOf(u.role),
    name: [u.name, u.surname].filter(Boolean).join(' '),
    failed_logins: u.unsuccessful_login,
    created_at: u.created_at,
  }));
}

export async function listKeys(store: Store, gid: string): Promise<Row[]> {
  const org = await orgOf(store, gid);
  return (await store.keys.listForOrg(org.id)).map((k) => ({
    key_id: k.key_id,
    username: k.username,
    label: k.label,
    created_at: isoDate(k.created_at),
    last_used_at: isoDate(k.last_used_at),
    revoked_at: isoDate(k.revoked_at),
  }));
}

/** Each agent with its one state (contracts agent-state.ts), as `GET /agents` and the console give it. */
export async function listAgents(store: Store, gid: string, now = Math.floor(Date.now() / 1000)): Promise<Row[]> {
  const org = await orgOf(store, gid);
  const [agents, keys] = await Promise.all([store.agents.list(org.id), store.agents.keyCounts(org.id)]);
  return agents.map((a) => {
    const state = stateOf(a, keys.get(a.id), now);
    return {
      gaid: a.gaid,
      state: state.state,
      state_since: iso(state.since),
      last_checkin_at: iso(a.last_checkin_at),
      via: a.last_checkin_via,
      version: a.reported_version ?? a.document.version,
      hostname: a.hostname,
      live_keys: keys.get(a.id)?.live ?? 0,
    };
  });
}

export interface DecisionListOptions {
  kind?: BrowseKind;
  decision?: 0 | 1;
  text?: string;
  limit: number;
}

export async function listDecisions(store: Store, gid: string, o: DecisionListOptions): Promise<Row[]> {
  const org = await orgOf(store, gid);
  const rows: Row[] = [];
  let after: [string, string, string] | null = null;
  while (rows.length < o.limit) {
    const limit = Math.min(1000, o.limit - rows.length);
    const page = await store.browse.decisions({
      orgId: org.id,
      kinds: o.kind ? [o.kind] : ['ipv4', 'domain', 'url', 'file'],
      decision: o.decision ?? null,
      text: o.text ?? null,
      after,
      limit,
    });
    for (const d of page) {
      rows.push({
        kind: d.kind,
        value: d.value,
        decision: d.decision,
        ttl: iso(d.ttl),
        updated_at: d.updated_at,
        held: d.held,
        score: d.score,
        set_by: d.set_by,
        reason: d.reason,
      });
    }
    if (page.length < limit) break;
    const last = page.at(-1)!;
    after = [last.micros, last.kind, last.value];
  }
  return rows;
}

const COLUMNS = {
  org: ['gid', 'name', 'trust', 'delay', 'balance', 'users', 'created_at'],
  user: ['guid', 'username', 'role', 'name', 'failed_logins', 'created_at'],
  key: ['key_id', 'username', 'label', 'created_at', 'last_used_at', 'revoked_at'],
  agent: ['gaid', 'state', 'state_since', 'last_checkin_at', 'via', 'version', 'hostname', 'live_keys'],
  decision: ['kind', 'value', 'decision', 'ttl', 'updated_at', 'held', 'score', 'set_by', 'reason'],
} as const;

/** How a table shows a row where it differs from the JSON (which keeps the API's numbers). */
const TABLE_VIEW: Partial<Record<keyof typeof COLUMNS, (row: Row) => Row>> = {
  decision: (row) => ({ ...row, decision: row.decision === 1 ? 'block' : 'whitelist' }),
};

/** The rows of one `list` as its table prints them. */
export function listTable(what: keyof typeof COLUMNS, rows: Row[]): string {
  const view = TABLE_VIEW[what];
  return formatTable(view ? rows.map(view) : rows, COLUMNS[what]);
}

async function printList(what: keyof typeof COLUMNS, json: boolean | undefined, fn: (store: Store) => Promise<Row[]>): Promise<void> {
  const config = loadConfig();
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, owner: 'cli' });
  try {
    const rows = await fn(store);
    process.stdout.write(json ? `${JSON.stringify(rows, null, 2)}\n` : listTable(what, rows));
  } catch (err) {
    if (err instanceof ApiError) throw new Error(err.detail ?? err.code);
    throw err;
  } finally {
    await store.close();
  }
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new InvalidArgumentError('expected an integer from 1 to 1000000');
  return n;
}

/** Adds `list` under each noun; `orgs`, `users`, `keys`, `agents`, `decisions` are aliases of the nouns. */
export function registerListCommands(program: Command, groups: { org: Command; user: Command; key: Command; agent: Command }): { decision: Command } {
  const decision = program.command('decision').description("an organization's decisions (whitelist/block)");
  for (const [name, group] of Object.entries({ ...groups, decision }) as Array<[keyof typeof COLUMNS, Command]>) group.alias(`${name}s`);

  groups.org
    .command('list')
    .description('every organization: trust, delay, coin balance, users')
    .option('--json', 'a JSON array instead of a table')
    .action((opts: { json?: boolean }) => printList('org', opts.json, listOrgs));
  const perOrg = (what: 'user' | 'key' | 'agent', group: Command, description: string, fn: (store: Store, gid: string) => Promise<Row[]>) =>
    group
      .command('list')
      .description(description)
      .requiredOption('--org <gid>', 'organization id (RMP-GID-...)')
      .option('--json', 'a JSON array instead of a table')
      .action((opts: { org: string; json?: boolean }) => printList(what, opts.json, (store) => fn(store, opts.org)));
  perOrg('user', groups.user, "an organization's users and their roles", listUsers);
  perOrg('key', groups.key, "an organization's API keys (ids only), revoked ones included", listKeys);
  perOrg('agent', groups.agent, "an organization's agents: state (deactivated, keys_revoked, withdrawn, never_seen, silent, drifting, alive), last check-in, version, live agent keys", (store, gid) => listAgents(store, gid));
  decision
    .command('list')
    .description("an organization's decisions of every kind, most recently set first")
    .requiredOption('--org <gid>', 'organization id (RMP-GID-...)')
    .option('--kind <kind>', 'ipv4, domain, url or file (default: every kind)', (v: string) => {
      if (!['ipv4', 'domain', 'url', 'file'].includes(v)) throw new InvalidArgumentError('expected ipv4, domain, url or file');
      return v as BrowseKind;
    })
    .option('--decision <0|1>', '0 whitelists only, 1 blocks only', (v: string) => {
      if (v !== '0' && v !== '1') throw new InvalidArgumentError('expected 0 (whitelist) or 1 (block)');
      return Number(v) as 0 | 1;
    })
    .option('--text <text>', 'only values containing this text')
    .option('--limit <n>', 'at most this many rows', positive, 1000)
    .option('--json', 'a JSON array instead of a table')
    .action((opts: DecisionListOptions & { org: string; json?: boolean }) => printList('decision', opts.json, (store) => listDecisions(store, opts.org, opts)));
  return { decision };
}
