import { PassThrough } from 'node:stream';
import type { Detection } from '@rampart/plugin-kit';
import { describe, expect, it } from 'vitest';
import { Output } from './parse-output.ts';

/** What `parse` printed per detection before it wrote them piece by piece. */
const asTemplate = (d: Detection) =>
  `{"ts":${d.ts},"ip":"${d.ip}","source":${JSON.stringify(d.source)},"kind":${JSON.stringify(d.kind)},"attempts":${d.attempts}}\n`;

function sink() {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, bytes: () => Buffer.concat(chunks) };
}

describe('parse output', () => {
  it('writes the same bytes as the detection template, for any numbers and names', async () => {
    const detections: Detection[] = [
      { ts: 1740787204, ip: '198.51.100.9', source: 'ssh_log', kind: 'invalid_user', attempts: 1 },
      { ts: 0, ip: '2001:db8::1', source: 'ssh_log', kind: 'auth_failure', attempts: 0 },
      { ts: -0, ip: '1.2.3.4', source: 's', kind: 'k', attempts: 10 },
      { ts: 1429207370.568798, ip: '1.2.3.4', source: 'json', kind: 'scan', attempts: 123456789 },
      { ts: -5, ip: '1.2.3.4', source: 'json', kind: 'scan', attempts: -1 },
      { ts: 1e21, ip: '1.2.3.4', source: 'json', kind: 'scan', attempts: 2 ** 53 },
      { ts: Number.NaN, ip: 'ünïcode', source: 'quo"te\\', kind: 'tab\there\u2028', attempts: 2 ** 53 + 2 },
      { ts: 9, ip: '\u{1F600}', source: 'ëmoji \u{1F600}', kind: '\u0001', attempts: 99 },
    ];
    const { stream, bytes } = sink();
    const out = new Output(stream);
    for (const d of detections) out.detection(d);
    out.line('{"a":"ü"}\n');
    await out.flush(true);
    expect(bytes().toString('utf8')).toBe(detections.map(asTemplate).join('') + '{"a":"ü"}\n');
  });

  it('batches: nothing below 64 KiB unless forced, then every line in order across new buffers', async () => {
    const { stream, bytes } = sink();
    const out = new Output(stream);
    const d = (i: number): Detection => ({ ts: 1_700_000_000 + i, ip: `10.0.${i >> 8}.${i & 255}`, source: 'ssh_log', kind: 'auth_failure', attempts: i % 3 });
    const want: string[] = [];
    for (let i = 0; i < 100; i++) {
      out.detection(d(i));
      want.push(asTemplate(d(i)));
    }
    await out.flush(false);
    expect(bytes().length).toBe(0);
    for (let i = 100; i < 20_000; i++) {
      out.detection(d(i));
      want.push(asTemplate(d(i)));
      if (i % 500 === 0) await out.flush(false);
    }
    out.line('x'.repeat(300_000) + '\n'); // larger than the buffer: it grows
    want.push('x'.repeat(300_000) + '\n');
    await out.flush(true);
    expect(bytes().toString('utf8')).toBe(want.join(''));
  });
});
