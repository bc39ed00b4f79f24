import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDataDirTemplate, initdbInChild } from '../src/store/pglite-initdb.ts';
import { embeddedEnv, exited, serverDir, startServerProcess } from './support/server-process.ts';

/*
 * A new embedded store is private (directories 0700, files 0600) from the moment it exists,
 * whichever way it was made: initdb, a copy of the build's template, the rampart command's first
 * run, the server's first start. Each runs under umask 000, the most permissive one.
 */

const root = mkdtempSync(join(tmpdir(), 'rampart-modes-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Every directory and file under `dir` (itself included) whose mode is not 0700 / 0600. */
function notPrivate(dir: string): string[] {
  const wrong: string[] = [];
  const check = (path: string, isDir: boolean) => {
    const mode = (statSync(path).mode & 0o777).toString(8);
    if (mode !== (isDir ? '700' : '600')) wrong.push(`${path} ${mode}`);
  };
  check(dir, true);
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isDirectory() || entry.isFile()) check(join(entry.parentPath, entry.name), entry.isDirectory());
  }
  return wrong;
}

function count(dir: string): number {
  return readdirSync(dir, { recursive: true }).length;
}

async function underUmask0<T>(work: () => Promise<T>): Promise<T> {
  const umask = process.umask(0);
  try {
    return await work();
  } finally {
    process.umask(umask);
  }
}

describe('a new embedded store is private, whatever makes it', { timeout: 900_000 }, () => {
  let initialized = '';

  it('initdb', async () => {
    initialized = join(root, 'initdb');
    await underUmask0(() => initdbInChild(initialized));
    expect(count(initialized)).toBeGreaterThan(500);
    expect(notPrivate(initialized)).toEqual([]);
  });

  it("a copy of the build's template, even of a template left world-readable", async () => {
    const template = initialized;
    for (const entry of readdirSync(template, { withFileTypes: true, recursive: true })) chmodSync(join(entry.parentPath, entry.name), entry.isDirectory() ? 0o777 : 0o666);
    const copy = join(root, 'copy');
    await underUmask0(() => copyDataDirTemplate(template, copy));
    expect(count(copy)).toBe(count(template));
    expect(notPrivate(copy)).toEqual([]);
  });

  it("the rampart command's first run", () => {
    const dataDir = join(root, 'cli', 'data');
    const r = spawnSync('/bin/sh', ['-c', `umask 000; exec "${process.execPath}" bin/rampart.js migrate`], { cwd: serverDir, env: embeddedEnv(dataDir), encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(count(dataDir)).toBeGreaterThan(500);
    expect(notPrivate(dataDir)).toEqual([]);
  });

  it("the server's first start", async () => {
    const dataDir = join(root, 'server', 'data');
    const server = await underUmask0(() => startServerProcess(dataDir, { expectDemo: true, startTimeoutMs: 600_000 }));
    try {
      expect(count(dataDir)).toBeGreaterThan(500);
      expect(notPrivate(dataDir)).toEqual([]);
    } finally {
      server.child.kill('SIGTERM');
      await exited(server.child);
    }
  });
});
