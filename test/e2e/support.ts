import { until } from '@rampart/plugin-kit/testing';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { buildApp, testConfig, openStore, type Store, createTestDatabase } from '@rampart/server/testing';

/*
 * End-to-end harness: the real control plane (PostgreSQL when DATABASE_URL is set, else PGlite)
 * on a fixed loopback port that survives a stop/start, and the real agent as a child process
 * started through its `rampart-agent` bin.
 */

export const AGENT_BIN = fileURLToPath(new URL('../../apps/agent/bin/rampart-agent.js', import.meta.url));

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface ControlPlane {
  store: Store;
  port: number;
  url: string;
  driver: 'postgres' | 'pglite';
  /** Stops answering (the port is closed); the data stays. */
  stop(): Promise<void>;
  /** Answers again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** `host`: the address to listen on (default 127.0.0.1), e.g. a veth end an agent in a network namespace reaches. */
export async function startControlPlane(options: { host?: string } = {}): Promise<ControlPlane> {
  const host = options.host ?? '127.0.0.1';
  let store: Store;
  let drop = async () => {};
  let driver: ControlPlane['driver'] = 'pglite';
  if (process.env.DATABASE_URL) {
    const db = await createTestDatabase();
    store = await openStore({ databaseUrl: db.url });
    drop = db.drop;
    driver = 'postgres';
  } else {
    store = await openStore({});
  }
  const port = await freePort(host);
  let app: FastifyInstance | undefined;
  const cp: ControlPlane = {
    store,
    port,
    driver,
    url: `http://${host}:${port}/api/v1`,
    async start() {
      app = await buildApp({ config: testConfig({ authCacheSeconds: 0 }), store });
      await app.listen({ host, port });
    },
    async stop() {
      await app?.close();
      app = undefined;
    },
    async close() {
      await cp.stop();
      await store.close();
      await drop();
    },
  };
  await cp.start();
  return cp;
}

/** `until` of @rampart/plugin-kit/testing with the end-to-end tests' patience (60 s, every 50 ms). */
export function waitFor<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 60_000, everyMs = 50): Promise<T> {
  return until(what, probe, timeoutMs, everyMs);
}

export interface AgentProcess {
  child: ChildProcess;
  logPath: string;
  exited: Promise<number | null>;
  kill9(): Promise<void>;
  terminate(): Promise<number | null>;
}

export function spawnAgent(args: string[], env: Record<string, string>, logPath: string, bin: string = AGENT_BIN, nodeArgs: string[] = []): AgentProcess {
  const child = spawn(process.execPath, [...nodeArgs, bin, ...args], { env: { ...process.env, TZ: 'UTC', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(logPath, { flags: 'a' });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    logPath,
    exited,
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    async terminate() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Runs an agent command to completion; resolves with its exit code and output. */
export async function runAgentCommand(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [AGENT_BIN, ...args], { env: { ...process.env, TZ: 'UTC', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, out, err };
}

export async function tempDir(prefix: string): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export interface AgentConfigInput {
  controlPlaneUrl: string;
  gaid: string;
  stateDir: string;
  authLog: string;
  dryRunPath: string;
  metricsPort: number;
  apiKey?: string;
  threshold?: number;
  maxRetry?: number;
  websocket?: boolean;
}

/**
 * The agent config the e2e suites write: agent `gaid` of `controlPlaneUrl`, syncing every second
 * (every 2 s by cron), threshold 50 unless given; `extra` adds top-level settings (a key).
 */
export function agentConfigDocument(c: { controlPlaneUrl: string; gaid: string; threshold?: number; ids: unknown; ips: unknown; local: unknown; extra?: Record<string, unknown> }): Record<string, unknown> {
  return {
    control_plane_url: c.controlPlaneUrl,
    gaid: c.gaid,
    ts: Date.now(),
    score_threshold: c.threshold ?? 50,
    start_from: 0,
    version: 'v0.1.0',
    proxy: 'LOCAL',
    sync_time: 1,
    maximum_rules: 100_000,
    auth_name: 'Authorization',
    ...c.extra,
    ids: c.ids,
    ips: c.ips,
    local: c.local,
  };
}

export async function writeAgentConfig(path: string, c: AgentConfigInput): Promise<void> {
  const doc = agentConfigDocument({
    controlPlaneUrl: c.controlPlaneUrl,
    gaid: c.gaid,
    threshold: c.threshold,
    ...(c.apiKey ? { extra: { api_jwt_key: c.apiKey } } : {}),
    ids: { ssh_log: { active: true, ssh_log_location: c.authLog } },
    ips: { dry_run: { active: true, path: c.dryRunPath } },
    local: {
      state_dir: c.stateDir,
      metrics_port: c.metricsPort,
      log_level: 'info',
      sync_cron: '*/2 * * * * *',
      websocket: c.websocket ?? true,
      sources: { ssh_log: { max_retry: c.maxRetry ?? 5, find_time_seconds: 600, start_at: 'beginning' } },
    },
  });
  await writeFile(path, JSON.stringify(doc, null, 2));
}

export interface ConfiguredAgentInput {
  cp: ControlPlane;
  /** The test's directory: agent.json, auth.log, state/ and agent.log go there. */
  dir: string;
  gaid: string;
  /** An organization admin key, to register the agent. */
  adminKey: string;
  threshold?: number;
  /** The config's `ips` section: the integrations under test. */
  ips: Record<string, unknown>;
  /** Settings added to the config's `local` section. */
  local?: Record<string, unknown>;
  /** Top-level settings of the agent's document (`maximum_rules`, …). */
  extra?: Record<string, unknown>;
}

/**
 * An agent with an SSH log source and the given integrations, run as operators run it: its config
 * written and validated (`validate-config`), registered (`register`), then `run`, returned once its
 * health says healthy and connected to the sync channel.
 */
export async function startConfiguredAgent(c: ConfiguredAgentInput): Promise<{ agent: AgentProcess; health: Record<string, unknown>; metricsPort: number }> {
  const path = (name: string) => join(c.dir, name);
  const configPath = path('agent.json');
  const metricsPort = await freePort();
  await writeFile(path('auth.log'), '');
  await writeFile(
    configPath,
    JSON.stringify(
      agentConfigDocument({
        controlPlaneUrl: c.cp.url,
        gaid: c.gaid,
        threshold: c.threshold,
        ids: { ssh_log: { active: true, ssh_log_location: path('auth.log') } },
        ips: c.ips,
        local: { state_dir: path('state'), metrics_port: metricsPort, log_level: 'info', sync_cron: '*/2 * * * * *', ...c.local },
        ...(c.extra ? { extra: c.extra } : {}),
      }),
    ),
  );
  const validated = await runAgentCommand(['validate-config', configPath], {});
  if (validated.code !== 0) throw new Error(`validate-config exited ${validated.code}: ${validated.err}${validated.out}`);
  const registered = await runAgentCommand(['register', '-c', configPath], { RAMPART_ADMIN_KEY: c.adminKey });
  if (registered.code !== 0) throw new Error(`register exited ${registered.code}: ${registered.err}${registered.out}`);
  const agent = spawnAgent(['run', '-c', configPath], {}, path('agent.log'));
  const health = await waitFor('agent healthy and connected', async () => {
    const h = await agentHealth(metricsPort);
    return h?.healthy === true && h.channel_connected === true && h;
  });
  return { agent, health, metricsPort };
}

/** An sshd "Failed password" line as syslog writes it today. */
export function failedPassword(ip: string, pid: number): string {
  const d = new Date();
  const month = d.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
  const day = String(d.getUTCDate()).padStart(2, ' ');
  const time = d.toISOString().slice(11, 19);
  return `${month} ${day} ${time} edge01 sshd[${pid}]: Failed password for root from ${ip} port ${40000 + (pid % 20000)} ssh2`;
}

export async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

export async function agentHealth(port: number, timeoutMs = 1000): Promise<Record<string, unknown> | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    return (await res.json()) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
