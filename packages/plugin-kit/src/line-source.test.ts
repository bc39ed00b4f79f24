import { describe, expect, it } from 'vitest';
import { startCommandSource } from './line-source.ts';
import type { Detection, LineParser } from './index.ts';
import { silentLogger as silent } from './testing/loggers.ts';

/** Emits one detection per line that is an address. */
const echo = (): LineParser => ({
  push: (line, readAt) => (/^\d+\.\d+\.\d+\.\d+$/.test(line) ? [{ ts: readAt, ip: line, source: 'json_source', kind: 'x', attempts: 1 }] : []),
  flush: () => [],
});

describe('startCommandSource', () => {
  it('parses the output of a real command and rejects when it ends by itself', async () => {
    const seen: Detection[] = [];
    const running = startCommandSource(['sh', '-c', 'printf "192.0.2.1\\nnoise\\n192.0.2.2\\n"; echo bye >&2; exit 3'], echo(), {
      log: silent,
      emit: (d) => seen.push(d),
      signal: new AbortController().signal,
    });
    await expect(running.done).rejects.toThrow('sh ended (exit 3): bye');
    expect(seen.map((d) => d.ip)).toEqual(['192.0.2.1', '192.0.2.2']);
  });

  it('stops the command when the signal aborts', async () => {
    const stop = new AbortController();
    const seen: Detection[] = [];
    const running = startCommandSource(['sh', '-c', 'echo 198.51.100.1; exec sleep 60'], echo(), { log: silent, emit: (d) => seen.push(d), signal: stop.signal });
    const end = Date.now() + 10_000;
    while (seen.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    await expect(running.done).resolves.toBeUndefined();
    expect(seen.map((d) => d.ip)).toEqual(['198.51.100.1']);
  });
});
