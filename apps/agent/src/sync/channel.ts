import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import WebSocket from 'ws';
import { backoffDelay } from '@rampart/client';
import { SYNC_CLOSE, SyncDecisionChanged, SyncFeedChanged, SyncHello, SyncPing, SyncPong, SyncSettingsChanged, type AgentSyncMessage } from '@rampart/contracts';
import type { PluginLogger } from '@rampart/plugin-kit';
import type { z } from 'zod';

export interface ChannelHandlers {
  hello(message: z.infer<typeof SyncHello>): void;
  settingsChanged(message: z.infer<typeof SyncSettingsChanged>): void;
  decisionChanged(message: z.infer<typeof SyncDecisionChanged>): void;
  feedChanged(message: z.infer<typeof SyncFeedChanged>): void;
  /** The agent's state for a `state` message. */
  state(): Omit<Extract<AgentSyncMessage, { type: 'state' }>, 'type' | 'hostname'>;
}

export interface ChannelOptions {
  url: string;
  headers: () => Record<string, string>;
  log: PluginLogger;
  handlers: ChannelHandlers;
  heartbeatMs?: number;
}

/**
 * Reconnection schedules, each a jittered exponential back-off (a delay uniformly in [ceiling/2,
 * ceiling]):
 * - `normal` (the connection dropped, the server did not answer): from 0.5 s, capped at 4 s, so an
 *   agent is back within ~4 s of its control plane answering again after a restart or a crash,
 *   while many agents still spread their attempts;
 * - `quick` (the server said it is going away: close 1001 on shutdown, 1012 "reconnect"): from
 *   100 ms, capped at 1 s, for the first QUICK_ATTEMPTS attempts (~20 s, a restart's length),
 *   then the normal schedule;
 * - `refused` (the server refused this agent: 401/403 at the upgrade, close 4401/4403): from 1 s
 *   up to 60 s; retrying faster would not change the answer until an operator acts.
 */
export const RECONNECT = {
  normal: { baseMs: 500, maxMs: 4_000 },
  quick: { baseMs: 100, maxMs: 1_000 },
  refused: { baseMs: 1_000, maxMs: 60_000 },
} as const;
export const QUICK_ATTEMPTS = 20;
export type ReconnectSchedule = keyof typeof RECONNECT;

/** The delay before reconnect attempt `attempt` (0 = the first since the schedule began). */
export function reconnectDelay(attempt: number, schedule: ReconnectSchedule, random: () => number = Math.random): number {
  if (schedule === 'quick' && attempt >= QUICK_ATTEMPTS) return backoffDelay(attempt - QUICK_ATTEMPTS, RECONNECT.normal, random);
  return backoffDelay(attempt, RECONNECT[schedule], random);
}

/**
 * The schedule after a close with `code` (`refusedStatus`: the HTTP status of a refused upgrade),
 * given the current one; a change of schedule restarts its attempts.
 */
export function scheduleAfterClose(code: number, refusedStatus: number | undefined, current: ReconnectSchedule): ReconnectSchedule {
  if (code === SYNC_CLOSE.shutdown || code === SYNC_CLOSE.resync) return 'quick';
  if (code === SYNC_CLOSE.unauthorized || code === SYNC_CLOSE.forbidden || refusedStatus === 401 || refusedStatus === 403) return 'refused';
  // A drop while on the quick schedule (the server went away, its port is not open yet) stays on it.
  return current === 'quick' ? 'quick' : 'normal';
}

const PARSERS = { hello: SyncHello, settings_changed: SyncSettingsChanged, decision_changed: SyncDecisionChanged, feed_changed: SyncFeedChanged, ping: SyncPing, pong: SyncPong } as const;

/**
 * The live sync channel (`GET /api/v1/agents/sync`): receives pushes, answers pings, pings the
 * server and reconnects with jittered back-off. Messages of unknown types are ignored (a newer
 * server may send more). Missing a push is harmless: the scheduled pulls catch up from the cursor.
 */
export class SyncChannel {
  private socket: WebSocket | undefined;
  private attempt = 0;
  private schedule: ReconnectSchedule = 'normal';
  /** HTTP status of the last refused upgrade (cleared at each attempt). */
  private refusedStatus: number | undefined;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private awaitingPong: string | undefined;
  connected = false;

  constructor(private readonly options: ChannelOptions) {}

  start(): void {
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.heartbeat);
    this.socket?.close(1000, 'agent stopping');
    this.socket?.terminate();
  }

  /** Sends the agent's enforcement state (also a check-in). */
  sendState(): void {
    const s = this.options.handlers.state();
    this.send({ type: 'state', hostname: hostname(), ...s });
  }

  private send(message: AgentSyncMessage): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  private connect(): void {
    if (this.stopped) return;
    const { log } = this.options;
    const socket = new WebSocket(this.options.url, { headers: this.options.headers(), handshakeTimeout: 10_000, maxPayload: 64 * 1024 * 1024 });
    this.socket = socket;
    socket.on('open', () => {
      this.attempt = 0;
      this.schedule = 'normal';
      this.connected = true;
      log.info({ url: this.options.url }, 'sync channel connected');
      this.startHeartbeat();
      this.sendState();
    });
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      this.onMessage(data.toString());
    });
    socket.on('unexpected-response', (_req, res) => {
      this.refusedStatus = res.statusCode;
      log.warn({ status: res.statusCode }, 'sync channel refused');
      socket.terminate();
    });
    socket.on('error', (err) => log.debug({ err }, 'sync channel error'));
    socket.on('close', (code) => {
      this.connected = false;
      clearInterval(this.heartbeat);
      if (this.stopped) return;
      const next = scheduleAfterClose(code, this.refusedStatus, this.schedule);
      this.refusedStatus = undefined;
      // Going away starts the quick schedule afresh; any other change of schedule restarts too.
      if (next !== this.schedule || code === SYNC_CLOSE.shutdown || code === SYNC_CLOSE.resync) this.attempt = 0;
      this.schedule = next;
      const delay = reconnectDelay(this.attempt++, next);
      log.info({ code, schedule: next, retryInMs: delay }, 'sync channel closed; reconnecting');
      this.reconnectTimer = setTimeout(() => this.connect(), delay);
      this.reconnectTimer.unref();
    });
  }

  private startHeartbeat(): void {
    clearInterval(this.heartbeat);
    const every = this.options.heartbeatMs ?? 30_000;
    this.heartbeat = setInterval(() => {
      if (this.awaitingPong) {
        // No answer to the last ping within a whole period: the connection is dead.
        this.options.log.warn({}, 'sync channel heartbeat lost');
        this.awaitingPong = undefined;
        this.socket?.terminate();
        return;
      }
      this.awaitingPong = randomBytes(8).toString('hex');
      this.send({ type: 'ping', nonce: this.awaitingPong });
    }, every);
    this.heartbeat.unref();
  }

  private onMessage(text: string): void {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return;
    }
    const type = (raw as { type?: unknown })?.type;
    if (typeof type !== 'string' || !Object.hasOwn(PARSERS, type)) return;
    const parsed = PARSERS[type as keyof typeof PARSERS].safeParse(raw);
    if (!parsed.success) {
      this.options.log.warn({ type, issues: parsed.error.issues.slice(0, 5) }, 'sync message does not match its contract; ignored');
      return;
    }
    const message = parsed.data;
    const h = this.options.handlers;
    try {
      switch (message.type) {
        case 'hello':
          h.hello(message);
          break;
        case 'settings_changed':
          h.settingsChanged(message);
          break;
        case 'decision_changed':
          h.decisionChanged(message);
          break;
        case 'feed_changed':
          h.feedChanged(message);
          break;
        case 'ping':
          this.send({ type: 'pong', nonce: message.nonce });
          break;
        case 'pong':
          if (message.nonce === this.awaitingPong) this.awaitingPong = undefined;
          break;
      }
    } catch (err) {
      this.options.log.error({ err, type }, 'sync message handler failed');
    }
  }
}
