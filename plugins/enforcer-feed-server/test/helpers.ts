import { execFile } from 'node:child_process';
import { request } from 'node:https';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CspFeedConfig, FirewallBFeedConfig, type FeedServerConfig } from '../src/index.ts';

export { recordingLogger, type LogLine } from '@rampart/plugin-kit/testing';

export const tempDir = () => mkdtemp(join(tmpdir(), 'rampart-feeds-'));

/** A firewall_b (or csp) entry listening on a free loopback port, files in `dir`. */
export function feedConfig(dir: string, extra: Record<string, unknown> = {}, label: 'firewall_b' | 'csp' = 'firewall_b'): FeedServerConfig {
  const schema = label === 'csp' ? CspFeedConfig : FirewallBFeedConfig;
  return schema.parse({
    active: true,
    password: 'feed-pass-1',
    feeds: 'rampart',
    updates: '5',
    ...extra,
    options: { listen_host: '127.0.0.1', listen_port: 0, state_dir: dir, cert_names: ['localhost', '127.0.0.1'], ...(extra.options as object) },
  });
}

export interface CurlResult {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Runs curl as a device would (`-sS`, headers captured with `-D -`), with the given extra args. */
export function curl(args: string[]): Promise<CurlResult> {
  return new Promise((resolve, reject) => {
    execFile('curl', ['-sS', '-D', '-', ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`curl failed: ${stderr || err.message}`));
      resolve(parseHttp(stdout));
    });
  });
}

function parseHttp(raw: string): CurlResult {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(head[0]!.split(' ')[1]), headers, body: raw.slice(split + 4) };
}

/** Node's global fetch in a child process that trusts `caFile` (NODE_EXTRA_CA_CERTS): no -k. */
export function nodeFetch(url: string, caFile: string, headers: Record<string, string>): Promise<{ status: number; etag: string | null; body: string }> {
  const script = `fetch(process.argv[1], { headers: JSON.parse(process.argv[2]) }).then(async (r) => process.stdout.write(JSON.stringify({ status: r.status, etag: r.headers.get('etag'), body: await r.text() })), (e) => { console.error(String(e.cause ?? e)); process.exit(2); })`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script, url, JSON.stringify(headers)], { env: { ...process.env, NODE_EXTRA_CA_CERTS: caFile }, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`node fetch failed: ${stderr || err.message}`));
      resolve(JSON.parse(stdout) as { status: number; etag: string | null; body: string });
    });
  });
}

/** One GET over node:https trusting `ca`; the whole body. */
export function httpsGet(port: number, path: string, ca: string, auth: string): Promise<{ status: number; etag: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, ca, servername: 'localhost', auth, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, etag: String(res.headers.etag), body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
