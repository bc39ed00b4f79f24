import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './nginx-instance.ts';
import { waitFor } from './until.ts';

export interface SquidInstance {
  dir: string;
  port: number;
  /** The `url_regex` ACL file and the `dstdomain` ACL file the config denies. */
  urlsFile: string;
  domainsFile: string;
  /** `squid -f <conf> -k reconfigure`: the enforcer's reload command for this instance. */
  reloadCommand: string;
  /** Status code of a GET of `url` through the proxy (a connection refused during a reconfigure is retried for 10 s). */
  get(url: string): Promise<number>;
  stop(): Promise<void>;
}

/** Status of a GET of an absolute URL through an HTTP proxy on 127.0.0.1:`port`. */
export function proxyGet(port: number, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'GET', path: url, headers: { host: new URL(url).host }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Starts a private Squid (`squid -N`, a foreground child; own port, pid file, logs, no cache)
 * that denies what the README's two ACLs list and forwards the rest; `hosts` (name → address)
 * is its hosts file, so test names resolve without DNS.
 */
export async function startSquid(hosts: Record<string, string> = {}): Promise<SquidInstance> {
  const dir = await mkdtemp(join(tmpdir(), 'rampart-squid-'));
  // Squid started as root runs as its effective user (proxy): the directory must be open to it.
  await chmod(dir, 0o777);
  const port = await freePort();
  const conf = join(dir, 'squid.conf');
  const urlsFile = join(dir, 'urls.acl');
  const domainsFile = join(dir, 'domains.acl');
  await writeFile(urlsFile, '');
  await writeFile(domainsFile, '');
  await writeFile(join(dir, 'hosts'), Object.entries(hosts).map(([name, address]) => `${address} ${name}\n`).join(''));
  await writeFile(
    conf,
    `http_port 127.0.0.1:${port}
pid_filename ${dir}/squid.pid
cache_log ${dir}/cache.log
access_log ${dir}/access.log
cache_store_log none
cache deny all
cache_mem 0 MB
coredump_dir ${dir}
netdb_filename none
pinger_enable off
shutdown_lifetime 0 seconds
hosts_file ${dir}/hosts
dns_nameservers 127.0.0.1
acl rampart_blocked_domains dstdomain "${domainsFile}"
acl rampart_blocked_urls url_regex "${urlsFile}"
http_access deny rampart_blocked_domains
http_access deny rampart_blocked_urls
http_access allow localhost
http_access deny all
`,
  );
  const child = spawn('squid', ['-N', '-f', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let running = true;
  const exited = new Promise<void>((resolve) => child.once('exit', () => ((running = false), resolve())));
  // Squid closes its listening port while it reconfigures: a refused connection is retried.
  const get = async (url: string): Promise<number> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        return await proxyGet(port, url);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if ((code !== 'ECONNREFUSED' && code !== 'ECONNRESET') || Date.now() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  try {
    await waitFor(async () => {
      if (!running) throw new Error(`squid exited: ${stderr.trim()}`);
      // An answer of any kind (the URL is unroutable on purpose): Squid accepts connections.
      return (await get('http://127.0.0.1:1/')) > 0;
    }, 'Squid to accept connections', 30_000);
  } catch (err) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    port,
    urlsFile,
    domainsFile,
    reloadCommand: `squid -f '${conf}' -k reconfigure`,
    get,
    async stop() {
      if (running) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
