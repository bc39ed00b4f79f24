import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './nginx-instance.ts';
import { waitFor } from './until.ts';

export interface HaproxyInstance {
  dir: string;
  port: number;
  /** Admin-level stats socket (runtime API). */
  socket: string;
  /** The ACL pattern file `acl rampart_blocked src -f <acl>` loads. */
  acl: string;
  stop(): Promise<void>;
}

function socketAnswers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ path });
    let data = '';
    s.on('data', (d: Buffer) => (data += d.toString()));
    s.on('error', () => resolve(false));
    s.on('close', () => resolve(data.includes('Name: HAProxy')));
    s.end('show info\n');
  });
}

/**
 * Starts a private HAProxy (foreground child, so it is reaped; own socket, loopback port and ACL
 * file) that answers 403 to sources in the ACL and 200 otherwise, as the enforcer's README shows.
 */
export async function startHaproxy(): Promise<HaproxyInstance> {
  const dir = await mkdtemp(join(tmpdir(), 'rampart-haproxy-'));
  const port = await freePort();
  const socket = join(dir, 'admin.sock');
  const acl = join(dir, 'blocklist.acl');
  await writeFile(acl, '');
  await writeFile(
    join(dir, 'haproxy.cfg'),
    `global
  stats socket ${socket} mode 600 level admin
defaults
  mode http
  timeout connect 2s
  timeout client 5s
  timeout server 5s
frontend www
  bind 127.0.0.1:${port}
  acl rampart_blocked src -f ${acl}
  http-request deny deny_status 403 if rampart_blocked
  http-request return status 200 content-type text/plain string ok
`,
  );
  const child = spawn('haproxy', ['-f', join(dir, 'haproxy.cfg'), '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let running = true;
  const exited = new Promise<void>((resolve) => child.once('exit', () => ((running = false), resolve())));
  try {
    await waitFor(async () => {
      if (!running) throw new Error(`haproxy exited: ${stderr.trim()}`);
      return socketAnswers(socket);
    }, 'the HAProxy stats socket');
  } catch (err) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    port,
    socket,
    acl,
    async stop() {
      if (running) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
