import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { journalctlArgs, journalCursorPath, journalMatch, readJournalCursor, startJournalSource } from './journal.ts';
import type { Detection, LineParser } from './index.ts';
import { EnvelopeParser } from './envelope.ts';
import { JOURNAL_REMOTE, journalReadToEnd, writeJournal } from './testing/journal-remote.ts';
import { systemGate } from './testing/system-gate.ts';
import { silentLogger as silent } from './testing/loggers.ts';

const CURSOR = 's=43cc5830b2184c6c89b04e927aa1dadc;i=7d0;b=0123456789abcdef0123456789abcdef;m=7cf;t=62f3ce0e6624f;x=1728e7130b8cf517';

describe('journal locations', () => {
  it('maps kernel, units and identifiers to journalctl matches, and refuses the rest', () => {
    expect(journalMatch('journal:kernel')).toEqual({ args: ['_TRANSPORT=kernel'] });
    expect(journalMatch('journal:ssh.service')).toEqual({ args: ['--unit=ssh.service'] });
    expect(journalMatch('journal:sshd')).toEqual({ args: ['--identifier=sshd'] });
    expect(journalMatch('journal:')).toEqual({ error: expect.stringContaining('unit or syslog identifier') });
    expect(journalMatch('journal:-b')).toEqual({ error: expect.stringContaining('unit or syslog identifier') });
    expect(journalMatch('journal:ssh service')).toEqual({ error: expect.stringContaining('unit or syslog identifier') });
    expect(journalMatch('/var/log/auth.log')).toEqual({ error: expect.stringContaining('not a journal location') });
  });

  it('resumes after a saved cursor with every entry, else starts at the end or the beginning', () => {
    const base = ['journalctl', '--follow', '--output=json', '--all', '--no-pager', '--quiet'];
    expect(journalctlArgs('journal:sshd', {}, undefined, 'end')).toEqual([...base, '--lines=0', '--identifier=sshd']);
    expect(journalctlArgs('journal:sshd', {}, undefined, 'beginning')).toEqual([...base, '--lines=all', '--identifier=sshd']);
    expect(journalctlArgs('journal:kernel', { journal_directory: '/j', journal_file: '/j/x.journal' }, CURSOR, 'end')).toEqual([
      ...base,
      '--directory=/j',
      '--file=/j/x.journal',
      `--after-cursor=${CURSOR}`,
      '--lines=all',
      '_TRANSPORT=kernel',
    ]);
    expect(() => journalctlArgs('journal:a b', {}, undefined, 'end')).toThrow('journal:a b: journal: must be followed');
  });

  it('keeps one cursor file per location and journal, and ignores one that holds no cursor', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rampart-cursor-'));
    try {
      const a = journalCursorPath(dir, 'journal:ssh.service', {});
      expect(a).toMatch(/\/journal\/ssh\.service-[0-9a-f]{12}\.cursor$/);
      expect(journalCursorPath(dir, 'journal:ssh.service', { journal_directory: '/x' })).not.toBe(a);
      expect(readJournalCursor(a)).toBeUndefined();
      mkdirSync(join(dir, 'journal'));
      writeFileSync(a, `${CURSOR}\n`);
      expect(readJournalCursor(a)).toBe(CURSOR);
      writeFileSync(a, 'not a cursor');
      expect(readJournalCursor(a)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Emits one detection per entry whose message is an address, at the entry's time. */
const addresses = (): LineParser => {
  const envelopes = new EnvelopeParser();
  return {
    push: (line, readAt) => {
      const e = envelopes.parse(line, readAt);
      return e && /^\d+\.\d+\.\d+\.\d+$/.test(e.message) ? [{ ts: e.ts, ip: e.message, source: 'ssh_log', kind: e.program, attempts: 1 }] : [];
    },
    flush: () => [],
  };
};

describe.skipIf(systemGate('journal sources with journalctl', { commands: ['journalctl', JOURNAL_REMOTE] }))('startJournalSource with journalctl', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rampart-journal-kit-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const entry = (n: number, program: string) => ({
    __REALTIME_TIMESTAMP: String(1_740_000_000_000_000 + n * 1_000_000),
    __MONOTONIC_TIMESTAMP: String(n),
    _BOOT_ID: '0123456789abcdef0123456789abcdef',
    _HOSTNAME: 'h',
    SYSLOG_IDENTIFIER: program,
    _COMM: program,
    _PID: String(100 + n),
    _TRANSPORT: 'syslog',
    MESSAGE: `192.0.2.${n}`,
  });

  async function run(stateDir: string, journalDir: string, until: (seen: Detection[]) => boolean): Promise<Detection[]> {
    const seen: Detection[] = [];
    const stop = new AbortController();
    const running = startJournalSource({
      location: 'journal:sshd',
      journal: { journal_directory: journalDir },
      parser: addresses(),
      ctx: { log: silent, emit: (d) => seen.push(d), signal: stop.signal, stateDir },
      startAt: 'beginning',
    });
    // Until the source has read the journal to its end (its saved cursor is the last entry's):
    // an entry it should not take would have been emitted by then.
    const deadline = Date.now() + 20_000;
    while (!(until(seen) && journalReadToEnd(stateDir, 'journal:sshd', { journal_directory: journalDir })) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    await running.done;
    return seen;
  }

  it('reads only its identifier, with the journal fields, and resumes after its cursor', async () => {
    const journalDir = join(dir, 'j1');
    const stateDir = join(dir, 's1');
    mkdirSync(journalDir);
    await writeJournal(join(journalDir, 'a.journal'), [entry(1, 'sshd'), entry(2, 'cron'), entry(3, 'sshd')]);
    const first = await run(stateDir, journalDir, (seen) => seen.length >= 2);
    expect(first).toEqual([
      { ts: 1_740_000_001, ip: '192.0.2.1', source: 'ssh_log', kind: 'sshd', attempts: 1 },
      { ts: 1_740_000_003, ip: '192.0.2.3', source: 'ssh_log', kind: 'sshd', attempts: 1 },
    ]);
    const cursor = readFileSync(journalCursorPath(stateDir, 'journal:sshd', { journal_directory: journalDir }), 'utf8');
    expect(cursor).toMatch(/^s=[0-9a-f]{32};i=3;/);

    await writeJournal(join(journalDir, 'a.journal'), [entry(4, 'sshd')]);
    const second = await run(stateDir, journalDir, (seen) => seen.length >= 1);
    expect(second.map((d) => d.ip)).toEqual(['192.0.2.4']);
  });

  it('fails with journalctl\'s message when journalctl ends by itself', async () => {
    const running = startJournalSource({
      location: 'journal:sshd',
      journal: { journal_file: join(dir, 'absent', '*.journal') },
      parser: addresses(),
      ctx: { log: silent, emit: () => undefined, signal: new AbortController().signal },
      startAt: 'end',
    });
    await expect(running.done).rejects.toThrow(/^journalctl ended \(exit 1\): /);
  });

  it('fails, without reading, when its cursor cannot be kept', async () => {
    const stateDir = join(dir, 's2');
    writeFileSync(stateDir, 'a file where the state directory should be');
    const running = startJournalSource({
      location: 'journal:sshd',
      journal: { journal_directory: dir },
      parser: addresses(),
      ctx: { log: silent, emit: () => undefined, signal: new AbortController().signal, stateDir },
      startAt: 'end',
    });
    await expect(running.done).rejects.toThrow(/ENOTDIR|EEXIST/);
  });
});
