import { Writable } from 'node:stream';
import pino from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { SYNC_CLOSE } from '@rampart/contracts';
import { QUICK_ATTEMPTS, RECONNECT, SyncChannel, reconnectDelay, scheduleAfterClose } from '../src/sync/channel.ts';

/*
 * The sync channel's reconnection: the schedules as numbers (pure), then a real channel against a
 * real WebSocket server that closes it with "going away", a plain close and a refusal.
 */

describe('reconnection schedules', () => {
  const at = (schedule: Parameters<typeof reconnectDelay>[1], r: number) => Array.from({ length: 26 }, (_, a) => reconnectDelay(a, schedule, () => r));

  it('normal: from 0.5 s doubling, capped at 4 s whatever the attempt, jittered over the upper half', () => {
    expect(at('normal', 0).slice(0, 6)).toEqual([250, 500, 1000, 2000, 2000, 2000]);
    expect(at('normal', 1).slice(0, 6)).toEqual([500, 1000, 2000, 4000, 4000, 4000]);
    expect(Math.max(...at('normal', 1), reconnectDelay(1000, 'normal', () => 1))).toBe(RECONNECT.normal.maxMs);
  });

  it('quick: 50-100 ms first, at most 1 s for the first 20 attempts, then the normal schedule from its start', () => {
    expect(at('quick', 0).slice(0, 6)).toEqual([50, 100, 200, 400, 500, 500]);
    expect(at('quick', 1).slice(0, 6)).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(Math.max(...at('quick', 1).slice(0, QUICK_ATTEMPTS))).toBe(1000);
    expect(at('quick', 1).slice(QUICK_ATTEMPTS)).toEqual([500, 1000, 2000, 4000, 4000, 4000]);
    // The whole quick phase, at its longest, lasts about a restart.
    expect(at('quick', 1).slice(0, QUICK_ATTEMPTS).reduce((a, b) => a + b, 0)).toBe(17_500);
  });

  it('refused: from 1 s up to 60 s', () => {
    expect(at('refused', 1).slice(0, 8)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
  });

  it('picks the schedule from the close code, the refused status and the current schedule', () => {
    expect(scheduleAfterClose(SYNC_CLOSE.shutdown, undefined, 'normal')).toBe('quick');
    expect(scheduleAfterClose(SYNC_CLOSE.resync, undefined, 'refused')).toBe('quick');
    expect(scheduleAfterClose(1006, undefined, 'quick')).toBe('quick');
    expect(scheduleAfterClose(1006, undefined, 'normal')).toBe('normal');
    expect(scheduleAfterClose(1006, undefined, 'refused')).toBe('normal');
    expect(scheduleAfterClose(1006, 503, 'normal')).toBe('normal');
    expect(scheduleAfterClose(1006, 401, 'quick')).toBe('refused');
    expect(scheduleAfterClose(1006, 403, 'normal')).toBe('refused');
    expect(scheduleAfterClose(SYNC_CLOSE.unauthorized, undefined, 'normal')).toBe('refused');
    expect(scheduleAfterClose(SYNC_CLOSE.forbidden, undefined, 'quick')).toBe('refused');
    expect(scheduleAfterClose(SYNC_CLOSE.replaced, undefined, 'normal')).toBe('normal');
  });
});

interface Line {
  msg: string;
  code?: number;
  schedule?: string;
  retryInMs?: number;
  status?: number;
}

describe('SyncChannel against a real WebSocket server', () => {
  it('retries on the quick schedule after "going away", the normal one after a plain close, the slow one when refused', async () => {
    const lines: Line[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Line);
        done();
      },
    });
    let refuse = false;
    const sockets: WebSocket[] = [];
    const wss = new WebSocketServer({
      port: 0,
      host: '127.0.0.1',
      verifyClient: (_info, done) => (refuse ? done(false, 401) : done(true)),
    });
    wss.on('connection', (socket) => sockets.push(socket));
    await new Promise<void>((resolve) => wss.once('listening', resolve));
    const { port } = wss.address() as { port: number };
    const channel = new SyncChannel({
      url: `ws://127.0.0.1:${port}/`,
      headers: () => ({}),
      log: pino({ level: 'debug' }, sink),
      handlers: { hello() {}, settingsChanged() {}, decisionChanged() {}, feedChanged() {}, state: () => ({ enforced: 0 }) as never },
    });
    const until = async (what: string, probe: () => boolean) => {
      const deadline = Date.now() + 30_000;
      while (!probe()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(lines)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const reconnects = () => lines.filter((l) => l.msg === 'sync channel closed; reconnecting');
    const connects = () => lines.filter((l) => l.msg === 'sync channel connected').length;
    try {
      channel.start();
      await until('first connection', () => connects() === 1);
      for (const [code, connected] of [
        [SYNC_CLOSE.shutdown, 2],
        [1000, 3],
        [SYNC_CLOSE.resync, 4],
      ] as const) {
        sockets.at(-1)!.close(code, 'test');
        await until(`connection ${connected}`, () => connects() === connected);
      }
      refuse = true;
      sockets.at(-1)!.close(SYNC_CLOSE.unauthorized, 'revoked');
      await until('a refused upgrade', () => reconnects().length === 5);
      const seen = reconnects().map(({ code, schedule, retryInMs }) => ({ code, schedule, retryInMs }));
      expect(seen.map(({ code, schedule }) => ({ code, schedule }))).toEqual([
        { code: 1001, schedule: 'quick' },
        { code: 1000, schedule: 'normal' },
        { code: 1012, schedule: 'quick' },
        { code: 4401, schedule: 'refused' },
        { code: 1006, schedule: 'refused' },
      ]);
      const delays = seen.map((s) => s.retryInMs!);
      // First attempt of each schedule: quick 50-100 ms, normal 250-500 ms, refused 0.5-1 s then 1-2 s.
      expect([delays[0]! >= 50 && delays[0]! <= 100, delays[1]! >= 250 && delays[1]! <= 500, delays[2]! >= 50 && delays[2]! <= 100]).toEqual([true, true, true]);
      expect([delays[3]! >= 500 && delays[3]! <= 1000, delays[4]! >= 1000 && delays[4]! <= 2000]).toEqual([true, true]);
      expect(lines.filter((l) => l.msg === 'sync channel refused').map((l) => l.status)).toEqual([401]);
    } finally {
      channel.stop();
      await new Promise((resolve) => wss.close(resolve));
    }
  });
});
