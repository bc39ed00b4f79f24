import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, ENFORCERS, SOURCES, createLogger, validateAgentText, type AgentOptions } from '@rampart/agent';
import { dryRunEnforcer } from '@rampart/enforcer-dry-run';
import type { Diff, Enforcer, EnforcerDefinition } from '@rampart/plugin-kit';

/*
 * A burst lab: lanes of random operations sent through the real HTTP API of a control plane,
 * each lane with its own organization, addresses and agent (the real `Agent` class, in this
 * process, following over the real sync channel) whose `dry_run` enforcer (the real dry-run
 * plugin) is wrapped to record every change it is handed, at the moment it is handed.
 * Used by test/sync/push-bursts.property.test.ts and bench/push-bursts.ts.
 */

/** mulberry32: a small seeded PRNG, so a failing run can be replayed from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type BurstOp =
  | { op: 'report'; by: 'own' | 'other'; ip: string; confidence: number; decision?: 1 | 0 }
  | { op: 'decide'; ip: string; decision: -1 | 0 | 1; ttlHours?: number };

/** Lane `n`'s addresses and networks: all inside 45.(80+n).0.0/16, so lanes never overlap. */
export function laneValues(lane: number): { prefix: string; addresses: string[]; networks: string[] } {
  const p = `45.${80 + lane}`;
  return {
    prefix: `${p}.`,
    addresses: [...[1, 2, 3, 4, 5, 9, 200].map((h) => `${p}.1.${h}`), ...[1, 2, 3, 77].map((h) => `${p}.2.${h}`)],
    networks: [`${p}.1.0/24`, `${p}.1.0/29`, `${p}.2.0/24`, `${p}.0.0/16`],
  };
}

/** One random operation of lane `lane`: reports that cross thresholds, decisions, clears, ttl blacklists, network decisions. */
export function randomOp(rand: () => number, lane: number): BurstOp {
  const { addresses, networks } = laneValues(lane);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const r = rand();
  if (r < 0.4) {
    const op: BurstOp = { op: 'report', by: rand() < 0.7 ? 'own' : 'other', ip: pick(addresses), confidence: pick([0.2, 0.5, 1]) };
    if (op.by === 'own' && rand() < 0.15) op.decision = pick([1, 0] as const);
    return op;
  }
  if (r < 0.7) return { op: 'decide', ip: pick(addresses), decision: pick([1, 1, 0, -1] as const) };
  if (r < 0.8) return { op: 'decide', ip: pick(addresses), decision: 1, ttlHours: pick([1, 6, 48]) };
  return { op: 'decide', ip: pick(networks), decision: pick([1, 0, -1, -1] as const), ...(rand() < 0.2 ? { ttlHours: 2 } : {}) };
}

export interface LaneKeys {
  own: string;
  other: string;
}

/** Sends one operation through the HTTP API; answers the status (every one is expected to be accepted). */
export async function sendOp(url: string, keys: LaneKeys, op: BurstOp): Promise<number> {
  const now = Math.floor(Date.now() / 1000);
  if (op.op === 'report') {
    const body: Record<string, unknown> = { ip: op.ip, confidence: op.confidence, source: 'burst' };
    if (op.decision !== undefined) body.decision = op.decision;
    const res = await fetch(`${url}/ips`, { method: 'POST', headers: { authorization: op.by === 'own' ? keys.own : keys.other, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await res.arrayBuffer();
    return res.status;
  }
  const body = op.ttlHours !== undefined && op.decision === 1 ? { decision: 1, ttl: now + op.ttlHours * 3600 } : { decision: op.decision };
  const res = await fetch(`${url}/ips/${encodeURIComponent(op.ip)}`, { method: 'PUT', headers: { authorization: keys.own, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  return res.status;
}

/** `203.0.113.7` → `203.0.113.7/32`: list lines and enforcer entries in one spelling. */
export const cidr = (value: string): string => (value.includes('/') ? value : `${value}/32`);

/** The organization's `/ipv4/{threshold}` list (every page), as CIDRs starting with `prefix`. */
export async function serverList(url: string, key: string, threshold: number, prefix: string): Promise<Set<string>> {
  const out = new Set<string>();
  let page: string | undefined;
  for (let n = 0; n < 100; n++) {
    const res = await fetch(`${url}/ipv4/${threshold}${page ? `?page=${encodeURIComponent(page)}` : ''}`, { headers: { authorization: key } });
    if (res.status !== 200) throw new Error(`/ipv4/${threshold}: ${res.status} ${await res.text()}`);
    for (const line of (await res.text()).split('\n')) if (line && line.startsWith(prefix)) out.add(cidr(line));
    page = res.headers.get('next_page') ?? undefined;
    if (!page) return out;
  }
  throw new Error('the list never ended');
}

export interface EnforcerChange {
  kind: 'add' | 'remove';
  value: string;
  /** What the lane's clock said when the enforcer was handed the change (see `Recorder.clock`). */
  at: number;
  wall: number;
}

/**
 * What one agent's enforcer was handed, change by change: `held` is the set it holds now, and
 * `clock()` (set by the lane) stamps each change with the lane's server generation.
 */
export class Recorder {
  held = new Set<string>();
  changes: EnforcerChange[] = [];
  clock: () => number = () => 0;
  /** Called after every change (the bench's convergence check). */
  onChange: (() => void) | undefined;

  private note(kind: 'add' | 'remove', value: string): void {
    if (kind === 'add' ? this.held.has(value) : !this.held.has(value)) return;
    if (kind === 'add') this.held.add(value);
    else this.held.delete(value);
    this.changes.push({ kind, value, at: this.clock(), wall: performance.now() });
  }

  replace(values: readonly string[]): void {
    const next = new Set(values);
    // Deleting the element being visited is safe in a Set iteration.
    for (const v of this.held) if (!next.has(v)) this.note('remove', v);
    for (const v of next) this.note('add', v);
    this.onChange?.();
  }

  apply(diff: Diff): void {
    for (const v of diff.remove) this.note('remove', v);
    for (const e of diff.add) this.note('add', e.value);
    this.onChange?.();
  }
}

/** The real dry-run enforcer, its IPv4 instance wrapped so `recorder` sees each call as it is made. */
export function recordingDryRun(recorder: Recorder): EnforcerDefinition<unknown> {
  const inner = dryRunEnforcer as unknown as EnforcerDefinition<unknown>;
  return {
    ...inner,
    async create(config, ctx) {
      const enforcer = await inner.create(config, ctx);
      if (ctx.kind && ctx.kind !== 'ipv4') return enforcer;
      const wrapped: Enforcer = Object.create(enforcer) as Enforcer;
      wrapped.sync = (desired, signal) => {
        recorder.replace(desired.map((e) => e.value));
        return enforcer.sync(desired, signal);
      };
      wrapped.apply = (diff, signal) => {
        recorder.apply(diff);
        return enforcer.apply(diff, signal);
      };
      wrapped.withdraw = (signal) => {
        recorder.replace([]);
        return enforcer.withdraw(signal);
      };
      return wrapped;
    },
  };
}

export interface Follower {
  agent: Agent;
  recorder: Recorder;
  gaid: string;
  stop(): Promise<void>;
}

/**
 * Starts a real agent in this process for an agent registered by the caller (`gaid`, its key),
 * following `url` over the sync channel, its scheduled pulls far apart (so what it learns between
 * bursts comes through the channel), its `dry_run` enforcer recorded.
 */
export async function startFollower(o: { url: string; adminKey: string; gaid: string; threshold: number; logLevel?: string }): Promise<Follower> {
  const dir = await mkdtemp(join(tmpdir(), 'rampart-bursts-'));
  const dryRun = { active: true, path: join(dir, 'dry-run.json'), history_limit: 0 };
  const token = await registerFollower(o.url, o.adminKey, o.gaid, o.threshold, dryRun);
  const recorder = new Recorder();
  const registry: NonNullable<AgentOptions['registry']> = { sources: SOURCES, enforcers: new Map([...ENFORCERS, ['dry_run', recordingDryRun(recorder)]]) };
  const doc = {
    control_plane_url: o.url,
    gaid: o.gaid,
    ts: Date.now(),
    score_threshold: o.threshold,
    start_from: 0,
    version: 'v0.1.0',
    proxy: 'LOCAL',
    sync_time: 60,
    maximum_rules: 100_000,
    auth_name: 'Authorization',
    api_jwt_key: token,
    ids: {},
    ips: { dry_run: dryRun },
    local: { state_dir: join(dir, 'state'), metrics_port: 0, metrics_host: '127.0.0.1', log_level: o.logLevel ?? 'warn', websocket: true },
  };
  const { config, problems } = validateAgentText(JSON.stringify(doc), {}, registry);
  if (!config) throw new Error(`agent config: ${JSON.stringify(problems)}`);
  const agent = new Agent({ file: config, log: createLogger(o.logLevel ?? 'warn'), registry });
  await agent.start();
  return {
    agent,
    recorder,
    gaid: o.gaid,
    async stop() {
      await agent.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The registration document of a burst agent: what `startFollower` runs (the server's copy wins over the file's). */
function followerRegistration(gaid: string, threshold: number, dryRun: Record<string, unknown>): Record<string, unknown> {
  return {
    gaid,
    ts: Date.now(),
    score_threshold: threshold,
    start_from: 0,
    version: 'v0.1.0',
    proxy: 'LOCAL',
    sync_time: 60,
    maximum_rules: 100_000,
    auth_name: 'Authorization',
    api_jwt_key: null,
    ids: {},
    ips: { dry_run: dryRun },
  };
}

/** Registers an agent through the API with `adminKey` and issues its key. */
async function registerFollower(url: string, adminKey: string, gaid: string, threshold: number, dryRun: Record<string, unknown>): Promise<string> {
  const headers = { authorization: adminKey, 'content-type': 'application/json' };
  const reg = await fetch(`${url}/agents`, { method: 'POST', headers, body: JSON.stringify(followerRegistration(gaid, threshold, dryRun)) });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${await reg.text()}`);
  const tok = await fetch(`${url}/agents/${gaid}/token`, { method: 'POST', headers, body: '{}' });
  if (tok.status !== 201) throw new Error(`token: ${tok.status} ${await tok.text()}`);
  return ((await tok.json()) as { token: string }).token;
}
