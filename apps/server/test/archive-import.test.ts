import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/index.ts';

/* `rampart archive import` as operators run it: a real process, the embedded store, a CSV file. */

const serverDir = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'rampart-archive-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MD5 = 'd41d8cd98f00b204e9800998ecf8427e';
const SHA1 = 'da39a3ee5e6b4b0d3255bfef95601890afd80709';
const SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

describe('rampart archive import', () => {
  it('loads valid rows, reports bad ones by line, and deep scans find what it loaded', async () => {
    const csv = join(dir, 'archive.csv');
    writeFileSync(
      csv,
      [
        'md5,sha1,sha256,file_type,file_name,score,ts',
        `${MD5},${SHA1},${SHA256},APPLICATION/ZIP,"empty, really.zip",640,1600000000`,
        `${'1'.repeat(32)},${'2'.repeat(40)},${'3'.repeat(64)},application/pdf,,12,1600000001`,
        `${'1'.repeat(31)},${'2'.repeat(40)},${'3'.repeat(64)},application/pdf,x,12,1`,
        `${'4'.repeat(32)},${'5'.repeat(40)},${'6'.repeat(64)},application/x-unknown,x,12,1`,
        `${'4'.repeat(32)},${'5'.repeat(40)},${'6'.repeat(64)},application/pdf,x,1001,1`,
        '',
      ].join('\n'),
    );
    const { DATABASE_URL: _ignored, ...env } = process.env;
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'archive', 'import', csv], { cwd: serverDir, env: { ...env, DATA_DIR: dir, LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 120_000 });
    expect(run.status, run.stderr).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      imported: 2,
      rejected: 3,
      errors: ['line 4: md5: not a MD5 hex digest', "line 5: file_type: 'application/x-unknown' is not one of GET /file_types", 'line 6: score: expected an integer from 1 to 1000'],
    });
    const store = await openStore({ dataDir: dir });
    try {
      const row = await store.files.archivedByDigest(0, SHA1.toUpperCase());
      expect(row).toMatchObject({ md5: MD5.toUpperCase(), sha256: SHA256.toUpperCase(), file_type: 'application/zip', file_name: 'empty, really.zip', score: 640, ts: 1_600_000_000, archived: true });
      expect(await store.files.archivedByDigest(0, '3'.repeat(64))).toMatchObject({ file_name: '', score: 12 });
      expect(await store.files.byDigest(0, MD5)).toBeUndefined();
    } finally {
      await store.close();
    }
  }, 180_000);
});
