import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/index.ts';
import { exited, startServerProcess } from './support/server-process.ts';

/*
 * The embedded store (PGlite) on disk: what it promises about durability, exclusive use of its
 * data directory and file permissions, proven on real files and real processes.
 */

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-embedded-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('embedded store durability', { timeout: 180_000 }, () => {
  it('runs with fsync on and syncs the WAL to disk on every commit', async () => {
    const store = await openStore({ dataDir: join(tempDir(), 'data') });
    try {
      expect((await store.db.query<{ fsync: string }>('show fsync')).rows[0]!.fsync).toBe('on');
      expect((await store.db.query<{ synchronous_commit: string }>('show synchronous_commit')).rows[0]!.synchronous_commit).toBe('on');
      // Emscripten's fdatasync never reaches the file system: the WAL must be synced with fsync().
      expect((await store.db.query<{ wal_sync_method: string }>('show wal_sync_method')).rows[0]!.wal_sync_method).toBe('fsync');
      const before = store.db.stats().syncs!;
      for (let i = 0; i < 3; i += 1) await store.orgs.create({ gid: `RMP-GID-DURABLE${i}`, name: `Durable ${i}`, credits: 1, trust: 0.5 });
      // Each acknowledged commit made at least one fsync(2) of a real file descriptor.
      expect(store.db.stats().syncs! - before).toBeGreaterThanOrEqual(3);
    } finally {
      await store.close();
    }
  });

  it('keeps every acknowledged report when the server is killed (SIGKILL) right after the acknowledgement', async () => {
    const dataDir = join(tempDir(), 'data');
    const server = await startServerProcess(dataDir, { expectDemo: true });
    const sent: string[] = [];
    try {
      for (let i = 1; i <= 20; i += 1) {
        const ip = `198.51.100.${i}`;
        const res = await fetch(`${server.base}/ips`, {
          method: 'POST',
          headers: { authorization: server.demoKey!, 'content-type': 'application/json' },
          body: JSON.stringify({ ip, confidence: 0.8, source: 'ssh' }),
        });
        expect(res.status).toBe(201);
        sent.push(ip);
      }
    } finally {
      // No shutdown, no checkpoint: the process dies between the last acknowledgement and the next write.
      server.child.kill('SIGKILL');
      await exited(server.child);
    }
    const store = await openStore({ dataDir });
    try {
      const { rows } = await store.db.query<{ ip: string }>('select distinct host(i.network) as ip from ipv4_reports r join ipv4_indicators i on i.id = r.indicator_id');
      expect(rows.map((r) => r.ip).sort()).toEqual([...sent].sort());
    } finally {
      await store.close();
    }
  });
});
