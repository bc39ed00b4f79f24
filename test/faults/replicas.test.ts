import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, systemGate } from '@rampart/plugin-kit/testing';
import { agentConfig, connectSync, exited, openStore, seedOrg, sqlOf, startThrowawayPostgres, throwawayPostgresAvailable, type Store, type SyncPeer, type TestOrg, type ThrowawayPostgres } from '@rampart/server/testing';
import { agentHealth, failedPassword, startConfiguredAgent, tempDir, type AgentProcess } from '../e2e/support.ts';
import { removeDir, request, startReplica, waitUntil, type Replica } from './support.ts';

/*
 * Issue 36 item 1: three control-plane processes on one PostgreSQL (a throwaway cluster of the
 * test's own) behind a real HAProxy (Debian) that checks /readyz; sync-channel clients and two
 * real agents connected through it; reports, decisions and look-ups sent to whichever replica
 * HAProxy picks. Asserted: every decision reaches every connected client; coins exact; a page
 * cursor issued by one replica is valid on the others; failed-authentication lock-outs hold
 * across replicas (each replica enforces the deployment's budget divided by RATE_LIMIT_REPLICAS);
 * a rolling restart of all three while agents and a client report loses no acknowledged report,
 * clients see nothing but answers and 503 with Retry-After, and the agents are back on the sync
 * channel within 5 s of their replica going away. Figures are printed, never asserted as speed.
 */

const gate = systemGate('three replicas behind HAProxy', { commands: ['haproxy'] });
const REPLICAS = 3;
const PEERS = 100;
const AUTH_FAILURES_PER_ADDRESS = 9;
/** Bounds of correctness, not benchmarks: a decision that has not arrived by then is lost. */
const PUSH_BOUND_MS = 15_000;
const RECONNECT_BOUND_MS = 5_000;

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0;
}

interface Haproxy {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * HAProxy in front of the replicas, as docs/scaling.md shows: round robin, /readyz checked every
 * 300 ms (two failures take a replica out), a request refused by a replica going away is sent to
 * another (`retries`, `option redispatch`), one server connection per request (so no request is
 * written on a connection the replica is closing), WebSockets kept for an hour, and its own 503
 * (no replica ready) as problem+json with Retry-After. The client's address in X-Forwarded-For.
 */
async function startHaproxy(ports: number[]): Promise<Haproxy> {
  const dir = await mkdtemp(join(tmpdir(), 'rampart-replicas-haproxy-'));
  const port = await freePort();
  const cfg = [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  timeout tunnel 1h',
    '  retries 3',
    '  option redispatch 1',
    '  retry-on conn-failure empty-response',
    'frontend api',
    `  bind 127.0.0.1:${port}`,
    '  option forwardfor',
    '  default_backend replicas',
    'backend replicas',
    '  balance roundrobin',
    '  option http-server-close',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    // A check answers within 2 s (HAProxy's default is the interval, 300 ms here, which a busy
    // replica missed: all three were marked down at once); two failed checks take a replica out.
    '  timeout check 2s',
    '  default-server inter 300ms fall 2 rise 1',
    '  http-error status 503 content-type application/problem+json string \'{"type":"about:blank","title":"Service Unavailable","status":503,"code":"store_unavailable","detail":"no replica is ready"}\' hdr Retry-After 5',
    ...ports.map((p, i) => `  server r${i + 1} 127.0.0.1:${p} check`),
    '',
  ].join('\n');
  await writeFile(join(dir, 'haproxy.cfg'), cfg);
  const child = spawn('haproxy', ['-f', join(dir, 'haproxy.cfg'), '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(`HAProxy answering (${stderr})`, async () => (await fetch(`${url}/readyz`).then((r) => r.status).catch(() => 0)) === 200, 30_000, 100);
  return {
    url,
    child,
    async stop() {
      child.kill('SIGTERM');
      await exited(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

describe.skipIf(gate || !throwawayPostgresAvailable)('three replicas behind HAProxy', { timeout: 240_000 }, () => {
  let cluster: ThrowawayPostgres;
  let store: Store;
  let org: TestOrg;
  let other: TestOrg;
  let ports: number[];
  const replicas: Replica[] = [];
  let lb: Haproxy;
  let api: string;
  const peers: SyncPeer[] = [];
  const figures: string[] = [];
  let env: Record<string, string>;

  const startAt = (i: number) => startReplica({ databaseUrl: cluster.url, env: { ...env, PORT: String(ports[i]) } });

  beforeAll(async () => {
    cluster = await startThrowawayPostgres();
    store = await openStore({ databaseUrl: cluster.url });
    org = await seedOrg(store, { name: 'Replicas', credits: 1_000_000 });
    other = await seedOrg(store, { name: 'Replicas other', credits: 1_000_000 });
    ports = await Promise.all(Array.from({ length: REPLICAS }, () => freePort()));
    env = {
      TRUST_PROXY: '127.0.0.1',
      RATE_LIMIT_REPLICAS: String(REPLICAS),
      AUTH_FAILURES_PER_ADDRESS: String(AUTH_FAILURES_PER_ADDRESS),
    };
    // One at a time: the first applies the migrations (the others would wait on its lock anyway).
    for (let i = 0; i < REPLICAS; i++) replicas.push(await startAt(i));
    lb = await startHaproxy(ports);
    api = `${lb.url}/api/v1`;
  }, 200_000);

  afterAll(async () => {
    if (figures.length) console.info(`replicas behind HAProxy (PostgreSQL, ${REPLICAS} replicas):\n  ${figures.join('\n  ')}`);
    await Promise.all(peers.map((p) => p.close().catch(() => undefined)));
    await lb?.stop();
    for (const r of replicas) {
      await r.stop();
      removeDir(r.dataDir);
    }
    await store?.close();
    await cluster?.destroy();
  });

  const json = (method: string, path: string, key: string, body?: unknown) =>
    request(`${api}${path}`, { method, headers: { authorization: key }, ...(body === undefined ? {} : { json: body }) });

  async function agentKey(owner: TestOrg): Promise<{ gaid: string; token: string }> {
    const config = agentConfig();
    const registered = await json('POST', '/agents', owner.keys.admin, config);
    expect(registered.status, await registered.text()).toBe(201);
    const issued = await json('POST', `/agents/${config.gaid}/token`, owner.keys.admin, {});
    expect(issued.status, issued.status === 201 ? '' : await issued.text()).toBe(201);
    return { gaid: config.gaid, token: ((await issued.json()) as { token: string }).token };
  }

  it(`pushes every decision to each of ${PEERS} sync clients, whichever replica took it and holds them`, async () => {
    const keys = await Promise.all(Array.from({ length: PEERS }, (_, i) => agentKey(i % 10 === 0 ? other : org)));
    for (const k of keys) {
      const peer = await connectSync(lb.url, { authorization: k.token });
      await peer.next('hello', undefined, PUSH_BOUND_MS);
      peers.push(peer);
    }
    const ours = peers.filter((_, i) => i % 10 !== 0);
    const theirs = peers.filter((_, i) => i % 10 === 0);
    const latencies: number[] = [];
    for (let d = 0; d < 10; d++) {
      const ip = `198.51.100.${10 + d}`;
      const t0 = Date.now();
      expect((await json('PUT', `/ips/${ip}`, org.keys.contributor, { decision: 1 })).status).toBe(200);
      await Promise.all(
        ours.map(async (peer) => {
          await peer.next('decision_changed', (m) => m.indicator === ip, PUSH_BOUND_MS);
          latencies.push(Date.now() - t0);
        }),
      );
    }
    // Organizations stay apart: the other organization's clients heard none of it.
    expect(theirs.flatMap((p) => p.messages.filter((m) => m.type === 'decision_changed'))).toEqual([]);
    expect(latencies).toHaveLength(10 * ours.length);
    figures.push(`decision → every one of ${ours.length} sync clients: p50 ${latencies.sort((a, b) => a - b)[Math.floor(latencies.length / 2)]} ms, p99 ${p99(latencies)} ms, max ${latencies.at(-1)} ms (10 decisions, round robin over ${REPLICAS} replicas)`);
    await Promise.all(peers.map((p) => p.close()));
  });

  it('takes a page cursor issued by one replica on every other', async () => {
    const first = await request(`${replicas[0]!.base}/decisions?page_size=3`, { headers: { authorization: org.keys.reader } });
    expect(first.status).toBe(200);
    const page1 = (await first.json()) as { items?: unknown[]; next_page: string | null };
    expect(page1.next_page).toEqual(expect.any(String));
    const seconds = await Promise.all(
      replicas.map(async (r) => {
        const res = await request(`${r.base}/decisions?page_size=3&page=${encodeURIComponent(page1.next_page!)}`, { headers: { authorization: org.keys.reader } });
        return { status: res.status, body: await res.text() };
      }),
    );
    expect(seconds.map((s) => s.status)).toEqual([200, 200, 200]);
    expect(new Set(seconds.map((s) => s.body)).size).toBe(1);
  });

  it('holds a failed-authentication lock-out across replicas: the deployment budget, not three of them', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await request(`${api}/me`, { headers: { authorization: `rmp_${'0'.repeat(12)}_${'x'.repeat(43)}`, 'x-forwarded-for': '203.0.113.99' } });
      statuses.push(res.status);
      if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    const refused = statuses.filter((s) => s === 401).length;
    figures.push(`failed authentications from one address through HAProxy: ${refused} × 401, then ${statuses.filter((s) => s === 429).length} × 429 (budget ${AUTH_FAILURES_PER_ADDRESS} over ${REPLICAS} replicas)`);
    expect(refused).toBeLessThanOrEqual(AUTH_FAILURES_PER_ADDRESS);
    expect(statuses.slice(refused)).toEqual(Array(40 - refused).fill(429));
    // Another address is not locked out.
    expect((await request(`${api}/me`, { headers: { authorization: org.keys.reader, 'x-forwarded-for': '203.0.113.100' } })).status).toBe(200);
  });

  it('restarts every replica in turn under reports and look-ups: nothing acknowledged lost, only 503 with Retry-After, agents back within 5 s, coins exact', async () => {
    const dir = await tempDir('rampart-replicas-agents-');
    const agents: { agent: AgentProcess; metricsPort: number; log: string }[] = [];
    try {
      for (const name of ['a', 'b']) {
        await mkdir(join(dir.path, name));
        const started = await startConfiguredAgent({
          cp: { url: api } as never,
          dir: join(dir.path, name),
          gaid: `RMP-AGENT-ID-replica${name}${process.pid}`,
          adminKey: org.keys.admin,
          ips: { dry_run: { active: true, path: join(dir.path, name, 'dry-run.json') } },
        });
        agents.push({ ...started, log: join(dir.path, name, 'auth.log') });
      }
      const before = await store.orgs.byId(other.org.id);
      const statuses = new Map<number, number>();
      const acknowledged: string[] = [];
      const agentAttackers: string[] = [];
      let lookups = 0;
      let running = true;
      let n = 0;
      // A client reporting and looking up through HAProxy the whole time.
      const client = (async () => {
        while (running) {
          n += 1;
          const ip = `45.${Math.floor(n / 250) + 10}.${n % 250}.9`;
          const res = await request(`${api}/ips`, { method: 'POST', headers: { authorization: org.keys.contributor }, json: { ip, confidence: 1, source: 'replicas' } });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 503) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
          if (res.ok) acknowledged.push(ip);
          const look = await request(`${api}/ips/${ip}`, { headers: { authorization: other.keys.reader } });
          statuses.set(look.status, (statuses.get(look.status) ?? 0) + 1);
          if (look.ok) lookups += 1;
          await look.arrayBuffer();
        }
      })();
      // The agents' attackers: five failed passwords each, written while replicas go away.
      let m = 0;
      const attack = async () => {
        m += 1;
        const ip = `185.${Math.floor(m / 250) + 30}.${m % 250}.7`;
        agentAttackers.push(ip);
        const lines = [1, 2, 3, 4, 5].map((i) => failedPassword(ip, 1000 + i)).join('\n');
        await appendFile(agents[m % 2]!.log, `${lines}\n`);
      };
      // Each agent's longest time off the sync channel, polled every 50 ms.
      const off = agents.map(() => ({ since: 0, longest: 0 }));
      const watch = setInterval(() => {
        agents.forEach((a, i) => {
          void agentHealth(a.metricsPort, 500).then((h) => {
            const now = Date.now();
            if (h?.channel_connected === true) {
              if (off[i]!.since) off[i]!.longest = Math.max(off[i]!.longest, now - off[i]!.since);
              off[i]!.since = 0;
            } else if (!off[i]!.since) off[i]!.since = now;
          });
        });
      }, 50);
      const restarts: string[] = [];
      try {
        for (let i = 0; i < REPLICAS; i++) {
          await attack();
          const t0 = Date.now();
          await replicas[i]!.stop();
          await attack();
          replicas[i] = await startAt(i);
          await waitUntil('the replica ready again', async () => (await fetch(`${replicas[i]!.base.replace(/\/api\/v1$/, '')}/readyz`)).status === 200, 60_000);
          await attack();
          restarts.push(`r${i + 1} ${Date.now() - t0} ms`);
          await new Promise((r) => setTimeout(r, 1000));
        }
      } finally {
        running = false;
        await client;
      }
      // Both agents back, off the channel no longer than the bound at any time.
      await waitUntil('both agents on the sync channel', async () => (await Promise.all(agents.map((a) => agentHealth(a.metricsPort)))).every((h) => h?.channel_connected === true), RECONNECT_BOUND_MS * 2);
      clearInterval(watch);
      figures.push(`rolling restart (${restarts.join(', ')}): ${acknowledged.length} reports acknowledged, statuses ${JSON.stringify(Object.fromEntries(statuses))}; agents off the sync channel at most ${off.map((o) => o.longest).join(' / ')} ms`);
      expect([...statuses.keys()].filter((s) => s !== 200 && s !== 201 && s !== 503)).toEqual([]);
      expect(off.every((o) => o.longest <= RECONNECT_BOUND_MS)).toBe(true);

      // Nothing acknowledged is missing; every attacker the agents saw arrived (their spools resend).
      const stored = async (ips: string[]) => {
        const res = await sqlOf(store).query<{ n: number }>('select count(*)::int as n from ipv4_indicators where network = any($1::cidr[])', [ips.map((ip) => `${ip}/32`)]);
        return res.rows[0]!.n;
      };
      expect(await stored(acknowledged)).toBe(acknowledged.length);
      await waitUntil('every agent attacker on the server', async () => (await stored(agentAttackers)) === agentAttackers.length, 60_000, 250);

      // Coins: the look-ups charged exactly, once every replica has handed back its lease.
      for (const r of replicas) await r.stop();
      const after = await store.orgs.byId(other.org.id);
      expect(after!.debit_tokens - before!.debit_tokens).toBe(lookups);
      for (let i = 0; i < REPLICAS; i++) replicas[i] = await startAt(i);
    } finally {
      for (const a of agents) await a.agent.kill9();
      await dir.remove();
    }
  });
});
