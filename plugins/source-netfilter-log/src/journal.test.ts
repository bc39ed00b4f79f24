import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLines } from '@rampart/plugin-kit';
import type { Detection } from '@rampart/plugin-kit';
import { JOURNAL_REMOTE, journalReadToEnd, syslogToJournal, systemGate, writeJournal, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { netfilterLogSource, PacketFilterLogConfig } from './index.ts';

/*
 * packet_filter from `journal:kernel`: kernel LOG lines stored as kernel-transport entries by
 * systemd-journal-remote, between entries of other programs that carry the same text (any
 * local user can log "IN=… SRC=…" under any identifier: only the kernel's transport counts).
 * The source follows the journal directory and must find what the same lines give as a file.
 */

const READ_AT = Date.parse('2025-06-01T00:00:00Z') / 1000;

const kern = (second: number, src: string, dpt: number, spt: number) =>
  `May 31 10:${String(Math.floor(second / 60)).padStart(2, '0')}:${String(second % 60).padStart(2, '0')} fw kernel: RAMPART-DROP IN=eth0 OUT= SRC=${src} DST=192.0.2.10 LEN=60 TOS=0x00 PREC=0x00 TTL=52 ID=4242 DF PROTO=TCP SPT=${spt} DPT=${dpt} WINDOW=64240 RES=0x00 SYN URGP=0`;

describe.skipIf(systemGate('packet_filter from a real journal', { commands: ['journalctl', JOURNAL_REMOTE] }))('packet_filter from journal:kernel', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-kjournal-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads kernel entries only and detects what the same lines give as a file', async () => {
    const lines: string[] = [];
    // Three scanners (12 ports each), one client retrying port 22, and a forged line from logger.
    for (let s = 0; s < 3; s++) for (let p = 0; p < 12; p++) lines.push(kern(s * 100 + p, `203.0.113.${s + 1}`, 1000 + p, 40000 + p));
    for (let i = 0; i < 5; i++) lines.push(kern(400 + i, '198.51.100.7', 22, 41000));
    const forged = kern(500, '198.51.100.66', 80, 1).replace(' kernel: ', ' logger[99]: ');
    const entries = syslogToJournal([...lines, forged], READ_AT, (program): Record<string, string> => (program === 'kernel' ? { _TRANSPORT: 'kernel' } : {}));
    const journalDir = join(dir, 'journal');
    mkdirSync(journalDir);
    await writeJournal(join(journalDir, 'k.journal'), entries);

    const config = PacketFilterLogConfig.parse({ active: true, options: { log_path: 'journal:kernel', journal_directory: journalDir, start_at: 'beginning', mode: 'aggressive', scan_ports: 10 } });
    const seen: Detection[] = [];
    const stop = new AbortController();
    const running = netfilterLogSource.start(config, 'aggressive', { log: silent, emit: (d) => seen.push(d), signal: stop.signal, stateDir: join(dir, 'state') });
    const expected = parseLines(netfilterLogSource.createParser(config, 'aggressive'), lines, READ_AT);
    // Until the source has read the journal to its end (its saved cursor is the last kernel
    // entry's): an entry it should not take would have been emitted by then.
    const deadline = Date.now() + 20_000;
    const readToEnd = () => journalReadToEnd(join(dir, 'state'), 'journal:kernel', { journal_directory: journalDir });
    while (!(seen.length >= expected.length && readToEnd()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    await running.done;
    expect(expected.filter((d) => d.kind === 'port_scan').map((d) => d.ip)).toEqual(['203.0.113.1', '203.0.113.2', '203.0.113.3']);
    expect(seen).toEqual(expected);
    expect(seen.some((d) => d.ip === '198.51.100.66')).toBe(false);
  });
});
