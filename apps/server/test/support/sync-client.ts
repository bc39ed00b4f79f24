import { until } from '@rampart/plugin-kit/testing';
export { until };
import WebSocket from 'ws';
import { ServerSyncMessage } from '@rampart/contracts';

/** A test agent on the sync channel: every frame is parsed with the contract and kept. */
export interface SyncPeer {
  ws: WebSocket;
  messages: ServerSyncMessage[];
  /** The frames as sent, before the contract filled in any default. */
  raw: unknown[];
  closed: { code: number; reason: string } | undefined;
  /** Resolves with the first message (after `from`) that matches; rejects at the deadline. */
  next<T extends ServerSyncMessage['type']>(type: T, match?: (m: Extract<ServerSyncMessage, { type: T }>) => boolean, timeoutMs?: number): Promise<Extract<ServerSyncMessage, { type: T }>>;
  close(): Promise<void>;
}


/** Opens the sync channel; resolves once the upgrade succeeded (or rejects with the HTTP status). */
export function connectSync(baseUrl: string, headers: Record<string, string>, options: { autoPong?: boolean } = {}): Promise<SyncPeer> {
  const url = `${baseUrl.replace(/^http/, 'ws')}/api/v1/agents/sync`;
  const ws = new WebSocket(url, { headers, autoPong: options.autoPong ?? true });
  const peer: SyncPeer = {
    ws,
    messages: [],
    raw: [],
    closed: undefined,
    async next(type, match, timeoutMs = 5000) {
      return until(`a ${type} message`, () => peer.messages.find((m) => m.type === type && (!match || match(m as never))) as never, timeoutMs);
    },
    async close() {
      if (ws.readyState === WebSocket.CLOSED) return;
      const done = new Promise((r) => ws.once('close', r));
      ws.close();
      await done;
    },
  };
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as unknown;
    peer.raw.push(frame);
    peer.messages.push(ServerSyncMessage.parse(frame));
  });
  ws.on('close', (code, reason) => {
    peer.closed = { code, reason: reason.toString() };
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(peer));
    ws.once('unexpected-response', (req, res) => {
      // With this listener ws leaves the request open; end it so that the server can close.
      req.destroy();
      res.destroy();
      reject(new Error(`HTTP ${res.statusCode}`));
    });
    ws.once('error', reject);
  });
}
