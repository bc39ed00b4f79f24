/*
 * A sync-channel client process of bench/scale-10m.ts: holds the agents it is given (JSON on
 * stdin: [{ url, token }]) as WebSocket clients, answers the server's pings, and notes when each
 * client receives a decision_changed (wall-clock milliseconds, performance.timeOrigin based so
 * that all processes of the bench share one clock). IPC: sends { type: 'connected', count } once
 * every client had its hello; answers { type: 'collect', indicator } with the arrival times of
 * that indicator's decision (null for a client that has not had it yet). Not run alone.
 */
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';

interface Agent {
  url: string;
  token: string;
}

const agents = JSON.parse(readFileSync(0, 'utf8')) as Agent[];
const CONCURRENCY = 100;
const now = () => performance.timeOrigin + performance.now();
/** Per client: indicator → arrival time. */
const arrivals = agents.map(() => new Map<string, number>());
const sockets: WebSocket[] = [];

function connect(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(agents[i]!.url, { headers: { authorization: agents[i]!.token }, perMessageDeflate: false });
    ws.on('message', (data) => {
      const m = JSON.parse((data as Buffer).toString()) as { type: string; indicator?: string; nonce?: string };
      if (m.type === 'hello') resolve();
      else if (m.type === 'decision_changed' && m.indicator) arrivals[i]!.set(m.indicator.replace(/\/32$/, ''), now());
      else if (m.type === 'ping') ws.send(JSON.stringify({ type: 'pong', nonce: m.nonce }));
    });
    ws.once('unexpected-response', (_req, res) => reject(new Error(`agent ${i}: HTTP ${res.statusCode}`)));
    ws.once('error', reject);
    ws.on('close', (code) => {
      if (process.connected) process.send!({ type: 'closed', index: i, code });
    });
    sockets[i] = ws;
  });
}

let next = 0;
const worker = async () => {
  while (next < agents.length) await connect(next++);
};
await Promise.all(Array.from({ length: Math.min(CONCURRENCY, agents.length) }, worker));
process.send!({ type: 'connected', count: agents.length });

process.on('message', (m: { type: string; indicator?: string }) => {
  if (m.type === 'collect') process.send!({ type: 'arrivals', indicator: m.indicator, times: arrivals.map((a) => a.get(m.indicator!) ?? null) });
  if (m.type === 'stop') {
    for (const ws of sockets) ws.terminate();
    process.exit(0);
  }
});
