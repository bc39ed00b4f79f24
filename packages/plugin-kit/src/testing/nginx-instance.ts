import { waitFor } from './until.ts';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A loopback TCP port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** GET `http://127.0.0.1:<port>/` from a chosen loopback source address; resolves the status. */
export function statusFrom(port: number, localAddress: string, path = '/'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, localAddress, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(5000, () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end();
  });
}


export interface NginxInstance {
  dir: string;
  port: number;
  /** `nginx -p <dir> -c <conf>`: prefix every command line for this instance with it. */
  nginx: string;
  /**
   * Waits until the workers of an earlier configuration have exited: until then a new
   * connection may still reach one of them. Call it after the new configuration was seen.
   */
  settled(): Promise<void>;
  stop(): Promise<void>;
}

/** Command lines of the processes whose parent is `pid` (Linux /proc). */
async function childrenOf(pid: number): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push((await readFile(`/proc/${entry}/cmdline`, 'utf8')).replace(/\0/g, ' ').trim());
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/**
 * Starts a private nginx master (its own prefix, config, pid file and loopback port; never the
 * system's) with `http` holding the body of the `http {}` block; `{port}` and `{dir}` in it are
 * replaced (also in `files`). `main` goes before `events` (e.g. `load_module`); `files` (paths
 * relative to the instance directory) are written before nginx starts, for includes it needs.
 */
export async function startNginx(http: string, options: { main?: string; files?: Record<string, string> } = {}): Promise<NginxInstance> {
  const dir = await mkdtemp(join(tmpdir(), 'rampart-nginx-'));
  const port = await freePort();
  await mkdir(join(dir, 'logs'));
  const main = options.main ?? '';
  const conf = join(dir, 'nginx.conf');
  const fill = (text: string) => text.replaceAll('{port}', String(port)).replaceAll('{dir}', dir);
  for (const [name, content] of Object.entries(options.files ?? {})) await writeFile(join(dir, name), fill(content));
  await writeFile(
    conf,
    `${process.getuid?.() === 0 ? 'user root;\n' : ''}${fill(main)}
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
worker_processes 1;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
${fill(http)}
}
`,
  );
  const nginx = `nginx -p ${dir} -c ${conf}`;
  // A child in the foreground (not a daemon) so that this process reaps it when it stops.
  const child = spawn('nginx', ['-p', dir, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let running = true;
  void exited.then(() => (running = false));
  try {
    await waitFor(async () => {
      if (!running) throw new Error(`nginx exited: ${stderr.trim()}`);
      return (await statusFrom(port, '127.0.0.1')) > 0;
    }, 'nginx to answer');
  } catch (err) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    port,
    nginx,
    async settled() {
      await waitFor(async () => {
        const workers = await childrenOf(child.pid!);
        return workers.length === 1 && !workers[0]!.includes('shutting down');
      }, 'the old nginx workers to exit');
    },
    async stop() {
      if (running) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
