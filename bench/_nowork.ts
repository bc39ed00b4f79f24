/*
 * The no-work baseline every bench with a ceiling shares (lookups.ts, pg-ingest.ts,
 * indicators.ts): bench/_nowork-server.mjs, a fastify server in a process of its own pinned to the
 * server core, answering every request with one answer the control plane really gave (status,
 * headers, body); and one side's load run, timed with its serving process's and PostgreSQL's CPU
 * and the load average when it began.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { announced } from './_ipv4-child.ts';
import { runClient } from './_load-client.ts';
import { CLIENT_CPUS, SERVER_CPUS, TICK, processTicks, spawnNodePinned, type Side } from './_pinned.ts';

const here = dirname(fileURLToPath(import.meta.url));

/** Hop-by-hop and per-answer headers the no-work server sets itself. */
const OWN_HEADERS = new Set(['connection', 'keep-alive', 'date', 'content-length', 'transfer-encoding']);

export interface NoWork {
  pid: number;
  url: string;
  stop: () => Promise<void>;
}

/** Starts the no-work server answering `sample` (a response of the control plane) to every request; `dir` holds its answer file. */
export async function startNoWork(sample: Response, dir: string): Promise<NoWork> {
  const answerFile = join(dir, 'nowork-answer.json');
  writeFileSync(answerFile, JSON.stringify({ status: sample.status, headers: Object.fromEntries([...sample.headers].filter(([k]) => !OWN_HEADERS.has(k))), body: await sample.text() }));
  const child = spawnNodePinned(join(here, '_nowork-server.mjs'), { cpus: SERVER_CPUS, env: { ...process.env, NOWORK_ANSWER: answerFile } });
  const { port } = await announced<{ port: number }>(child, 'the no-work server');
  return { pid: child.pid!, url: `http://127.0.0.1:${port}`, stop: () => new Promise((resolve) => child.once('exit', () => resolve()).kill('SIGTERM')) };
}

/** One side's run: the load client (pinned to the client core) against `url`, with `pid`'s and PostgreSQL's CPU over it. */
export function measureSide(pid: number, url: string, o: { connections: number; duration: number; script?: string; headers?: Record<string, string> }, pgTicks: () => number = () => 0): Side {
  const load = loadavg()[0]!;
  const cpu0 = processTicks(pid);
  const pg0 = pgTicks();
  const run = runClient(url, { ...o, cpus: CLIENT_CPUS });
  return { run, cpu: (processTicks(pid) - cpu0) / TICK, pg: (pgTicks() - pg0) / TICK, load };
}

/** A Lua string literal (wrk scripts). */
export const luaString = (s: string): string => `"${s.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
