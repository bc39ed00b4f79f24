/*
 * Debian's nginx as a baseline process of its own: one worker, `sendfile on`, serving the files
 * of a directory on its own port, with its configuration, pid, logs and temp paths in a temp
 * directory (no root paths written; as root its worker runs as nobody, so the files are made
 * world-readable). Used by bench/lists.ts.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { procStatFields } from './_cpu.ts';
import { freePort } from '@rampart/plugin-kit/testing';

export interface Nginx {
  url: string;
  /** The directory it serves: files written there are served as /<name>. */
  root: string;
  /** CPU clock ticks of the master and its workers so far. */
  cpuTicks(): number;
  stop(): Promise<void>;
}


const ticks = (pid: number | string) => {
  const f = procStatFields(pid);
  return f ? Number(f[11]) + Number(f[12]) : 0;
};

/** Starts nginx (`cpus`: a `taskset -c` list, absent: any core) and resolves once it answers. */
export async function startNginx(cpus?: string): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-bench-nginx-'));
  const root = join(dir, 'www');
  mkdirSync(root);
  for (const d of [dir, root]) chmodSync(d, 0o755);
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    [
      'worker_processes 1;',
      'daemon off;',
      `pid ${join(dir, 'nginx.pid')};`,
      `error_log ${join(dir, 'error.log')} warn;`,
      'events { worker_connections 1024; }',
      'http {',
      '  access_log off;',
      '  sendfile on;',
      '  tcp_nopush on;',
      '  keepalive_requests 1000000;',
      '  keepalive_timeout 120s;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, `${t}_temp`)};`),
      '  default_type "text/plain; charset=utf-8";',
      `  server { listen 127.0.0.1:${port}; root ${root}; location / { etag on; } }`,
      '}',
      '',
    ].join('\n'),
  );
  const args = ['-c', conf, '-p', dir, '-e', join(dir, 'error.log')];
  const child = cpus ? spawn('taskset', ['-c', cpus, 'nginx', ...args], { stdio: 'inherit' }) : spawn('nginx', args, { stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  writeFileSync(join(root, 'ping'), 'ok');
  chmodSync(join(root, 'ping'), 0o644);
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/ping`)).ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || i > 100) throw new Error(`nginx did not start: ${readFileSync(join(dir, 'error.log'), 'utf8')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const pid = child.pid!;
  const workers = () => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    } catch {
      return [];
    }
  };
  return {
    url,
    root,
    cpuTicks: () => ticks(pid) + workers().reduce((sum, w) => sum + ticks(w), 0),
    async stop() {
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve).kill('SIGQUIT'));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes `bytes` as `name` under the nginx root, readable by its worker. */
export function serveFile(nginx: Nginx, name: string, bytes: Uint8Array): void {
  const path = join(nginx.root, name);
  writeFileSync(path, bytes);
  chmodSync(path, 0o644);
}

