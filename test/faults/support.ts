import { until } from '@rampart/plugin-kit/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exited, startServerProcess, type ServerProcess } from '@rampart/server/testing';

/*
 * The fault suite's harness: real server processes (src/main.ts), a TCP proxy that can cut one
 * replica off its database while the others keep working, and request helpers whose every call
 * has a deadline (a hang detector: the suite asserts that nothing hangs, never how fast it is).
 */

/** Every request of the suite is aborted after this: a request that needs it has hung. */
export const REQUEST_DEADLINE_MS = 20_000;

export function request(url: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined) headers.set('content-type', 'application/json');
  return fetch(url, { ...rest, headers, ...(json !== undefined ? { body: JSON.stringify(json) } : {}), signal: AbortSignal.timeout(REQUEST_DEADLINE_MS) });
}

/** `until` of @rampart/plugin-kit/testing with the fault tests' explicit bound (a probe that throws, as a fetch to a replica away does, is tried again). */
export function waitUntil<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number, everyMs = 50): Promise<T> {
  return until(what, probe, timeoutMs, everyMs);
}

/** The value of one Prometheus series in a /metrics text (0 when absent). */
export function metric(text: string, series: string): number {
  const escaped = series.replace(/[{}"\\]/g, '\\$&');
  return Number(new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
}

export interface Replica extends ServerProcess {
  dataDir: string;
  databaseUrl: string | undefined;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/** A server process on PostgreSQL (`databaseUrl`) or on the embedded store in `dataDir`. */
export async function startReplica(options: { databaseUrl?: string; dataDir?: string; env?: Record<string, string>; expectDemo?: boolean } = {}): Promise<Replica> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'rampart-fault-'));
  const env = { RAMPART_DEMO: options.expectDemo ? 'true' : 'false', ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}), ...options.env };
  const server = await startServerProcess(dataDir, { env, ...(options.expectDemo ? { expectDemo: true } : {}) });
  return {
    ...server,
    dataDir,
    databaseUrl: options.databaseUrl,
    async kill9() {
      server.child.kill('SIGKILL');
      await exited(server.child);
    },
    async stop() {
      if (server.child.exitCode !== null || server.child.signalCode !== null) return;
      server.child.kill('SIGTERM');
      await exited(server.child);
    },
  };
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * A TCP proxy to 127.0.0.1:`targetPort`. `cut()` drops every connection through it and refuses
 * new ones (as a network partition between a replica and its database would); `restore()` lets
 * connections through again.
 */
export interface TcpProxy {
  port: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function tcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let open = true;
  const server = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = () => {
    open = false;
    for (const s of sockets) s.destroy();
    sockets.clear();
  };
  return {
    port: (server.address() as AddressInfo).port,
    cut,
    restore() {
      open = true;
    },
    async close() {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
