import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineStats, sortCidrs } from '@rampart/plugin-kit';
import { conformanceAddresses, enforcerConformance } from '@rampart/plugin-kit/testing';
import {
  CspFeedConfig,
  cspFeedEnforcer,
  etagOf,
  feedBody,
  firewallBFeedEnforcer,
  FirewallBFeedConfig,
  notModified,
  parseFeed,
  publishFeed,
  selfSignedCertificate,
  type FeedServerEnforcer,
} from '../src/index.ts';
import { curl, feedConfig, httpsGet, nodeFetch, recordingLogger, tempDir } from './helpers.ts';

const issuesOf = (r: { error?: { issues: { path: PropertyKey[]; message: string }[] } }) => r.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).sort();
const open = async (dir: string, extra: Record<string, unknown> = {}, log = recordingLogger()) =>
  (await firewallBFeedEnforcer.create(feedConfig(dir, extra), { log })) as FeedServerEnforcer;
const portOf = (e: FeedServerEnforcer) => Number(new URL(e.status().url).port);

describe('feed-server config', () => {
  it('parses the README sample config', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = FirewallBFeedConfig.parse(JSON.parse(sample!));
    expect(parsed.feeds).toBe('rampart-high,rampart-all');
    expect(parsed.options.feed_max_entries).toEqual({ 'rampart-high': 5000 });
    expect(Object.keys(parsed.options.device_host_keys)).toEqual(['192.0.2.21:2222']);
    expect(parsed.command).toBe('request system external-list refresh type ip name {feed}');
    expect(CspFeedConfig.parse(JSON.parse(sample!)).options.max_entries).toBe(50_000);
  });

  it('takes the defaults of each label', () => {
    const base = { active: true, password: 'x', feeds: 'a' };
    expect(FirewallBFeedConfig.parse(base).options).toMatchObject({ max_entries: 50_000, listen_port: 8443, username: 'rampart', state_dir: '/var/lib/rampart-agent/feeds/firewall_b' });
    expect(CspFeedConfig.parse(base).options).toMatchObject({ max_entries: 128_000, listen_port: 8444, state_dir: '/var/lib/rampart-agent/feeds/csp' });
  });

  it('names every problem: an empty password refuses to start', () => {
    expect(issuesOf(FirewallBFeedConfig.safeParse({ active: true, password: '', feeds: '' }))).toEqual([
      'feeds: at least one feed name is required when active',
      'password: the feed password (basic auth) is required: an empty one would serve the list to anyone',
    ]);
    expect(
      issuesOf(
        FirewallBFeedConfig.safeParse({
          active: true,
          password: 'p',
          feeds: 'ok, bad/name, ok',
          connections: '10.0.0.4:99999',
          options: { feed_max_entries: { other: 5 }, cert_file: '/x.pem', username: 'a:b' },
        }),
      ),
    ).toEqual([
      "connections: not a host or host:port: '10.0.0.4:99999'",
      "feeds: 'bad/name' is not a feed name: letters, digits, _ . - (at most 64)",
      'feeds: a feed is named twice',
      'options.feed_max_entries.other: \'other\' is not one of the feeds',
      'options.key_file: cert_file and key_file go together',
      'options.username: no colon or blank (basic auth splits at the first colon)',
    ]);
    expect(issuesOf(FirewallBFeedConfig.safeParse({ active: true, password: 'p', feeds: 'a', connections: '10.0.0.4' }))).toEqual([
      "command: the refresh command is required with connections (e.g. 'request system external-list refresh type ip name {feed}')",
      "options.host_key_sha256: the host key of 10.0.0.4 must be pinned (here or in device_host_keys)",
      'options.ssh_password: a password or options.private_key_path is required',
      'options.ssh_user: required to log in to the devices',
    ]);
    expect(issuesOf(FirewallBFeedConfig.safeParse({ active: true, password: 'p', feeds: 'a', command: 'x', options: { ssh_user: 'u', ssh_password: 'p', host_key_sha256: `SHA256:${'A'.repeat(43)}` } }))).toEqual([
      'connections: the command needs the devices to run it on',
    ]);
    // Inactive: nothing is required.
    expect(FirewallBFeedConfig.safeParse({ active: false }).success).toBe(true);
  });
});

describe('feed files and validators', () => {
  it('writes one address or network a line and reads it back', () => {
    const body = feedBody([{ value: '10.0.0.0/8', score: 1 }, { value: '203.0.113.7/32', score: 2 }]);
    expect(body).toBe('10.0.0.0/8\n203.0.113.7\n');
    expect(parseFeed(body)).toEqual(['10.0.0.0/8', '203.0.113.7/32']);
    expect(feedBody([])).toBe('');
  });

  it('gives every version a later whole second and leaves an unchanged file alone', async () => {
    const dir = await tempDir();
    try {
      const t = Date.UTC(2026, 10, 27, 3, 0, 0, 400);
      expect(await publishFeed(dir, 'f', 'a\n', t)).toBe(true);
      expect((await stat(join(dir, 'f.txt'))).mtimeMs).toBe(Date.UTC(2026, 10, 27, 3, 0, 0));
      expect(await publishFeed(dir, 'f', 'a\n', t + 5000)).toBe(false);
      expect(await publishFeed(dir, 'f', 'b\n', t + 100)).toBe(true);
      expect((await stat(join(dir, 'f.txt'))).mtimeMs).toBe(Date.UTC(2026, 10, 27, 3, 0, 1));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('answers If-None-Match before If-Modified-Since', () => {
    const v = { etag: '"abc"', modifiedSeconds: 1_800_000_000 };
    const at = (s: number) => new Date(s * 1000).toUTCString();
    expect(notModified({ headers: { 'if-none-match': 'W/"abc", "x"' } }, v)).toBe(true);
    expect(notModified({ headers: { 'if-none-match': '*' } }, v)).toBe(true);
    expect(notModified({ headers: { 'if-none-match': '"old"', 'if-modified-since': at(1_800_000_001) } }, v)).toBe(false);
    expect(notModified({ headers: { 'if-modified-since': at(1_800_000_000) } }, v)).toBe(true);
    expect(notModified({ headers: { 'if-modified-since': at(1_799_999_999) } }, v)).toBe(false);
    expect(notModified({ headers: { 'if-modified-since': 'yesterday' } }, v)).toBe(false);
    expect(notModified({ headers: {} }, v)).toBe(false);
  });

  it('makes a self-signed certificate that node parses and that signs itself', () => {
    const made = selfSignedCertificate(['feeds.example', '192.0.2.10', '2001:db8::1'], 30, new Date(Date.UTC(2049, 11, 31)));
    const x509 = new X509Certificate(made.certPem);
    expect(x509.subjectAltName).toBe('DNS:feeds.example, IP Address:192.0.2.10, IP Address:2001:DB8:0:0:0:0:0:1');
    expect(x509.subject).toBe('CN=feeds.example');
    expect(x509.ca).toBe(true);
    expect(x509.verify(x509.publicKey)).toBe(true);
    expect(x509.checkPrivateKey(createPrivateKey(made.keyPem))).toBe(true);
    // notAfter in 2050 is a GeneralizedTime.
    expect(new Date(x509.validTo).toISOString()).toBe('2050-01-30T00:00:00.000Z');
  });
});

describe('feed-server over HTTPS, fetched the way devices fetch', () => {
  let dir: string;
  let e: FeedServerEnforcer;
  let base: string;
  let ca: string;
  const log = recordingLogger();
  const auth = ['-u', 'rampart:feed-pass-1'];

  beforeAll(async () => {
    dir = await tempDir();
    e = await open(dir, {}, log);
    base = `https://localhost:${portOf(e)}`;
    ca = join(dir, 'tls', 'cert.pem');
  });
  afterAll(async () => {
    await e.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers 503 before the first publish, so a device keeps its last good copy', async () => {
    const r = await curl([...auth, '--cacert', ca, `${base}/feeds/rampart.txt`]);
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('60');
  });

  it('serves the list to curl with the pinned certificate, then 304 on the ETag and on If-Modified-Since', async () => {
    await e.sync([{ value: '203.0.113.7/32', score: 9 }, { value: '198.51.100.0/24', score: 5 }]);
    const first = await curl([...auth, '--cacert', ca, '-A', 'PAN-OS', `${base}/feeds/rampart.txt`]);
    expect(first.status).toBe(200);
    expect(first.body).toBe('198.51.100.0/24\n203.0.113.7\n');
    expect(first.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(first.headers.etag).toBe(etagOf(first.body));
    const lastModified = first.headers['last-modified']!;
    expect(lastModified).toBe(new Date(Math.floor((await stat(join(dir, 'rampart.txt'))).mtimeMs / 1000) * 1000).toUTCString());

    const byEtag = await curl([...auth, '--cacert', ca, '-H', `If-None-Match: ${first.headers.etag}`, `${base}/feeds/rampart.txt`]);
    expect(byEtag.status).toBe(304);
    expect(byEtag.body).toBe('');
    expect(byEtag.headers.etag).toBe(first.headers.etag);
    const byDate = await curl([...auth, '--cacert', ca, '-H', `If-Modified-Since: ${lastModified}`, `${base}/feeds/rampart.txt`]);
    expect(byDate.status).toBe(304);
    // curl's own conditional (-z) sends the same header.
    expect((await curl([...auth, '--cacert', ca, '-z', lastModified, `${base}/feeds/rampart.txt`])).status).toBe(304);

    // An unchanged set rewrites nothing: same validators.
    await e.sync([{ value: '203.0.113.7/32', score: 1 }, { value: '198.51.100.0/24', score: 1 }]);
    expect((await curl([...auth, '--cacert', ca, '-H', `If-None-Match: ${first.headers.etag}`, `${base}/feeds/rampart.txt`])).status).toBe(304);

    await e.apply({ add: [{ value: '192.0.2.1/32', score: 3 }], remove: [] });
    const changed = await curl([...auth, '--cacert', ca, '-H', `If-None-Match: ${first.headers.etag}`, '-H', `If-Modified-Since: ${lastModified}`, `${base}/feeds/rampart.txt`]);
    expect(changed.status).toBe(200);
    expect(changed.body).toBe('192.0.2.1\n198.51.100.0/24\n203.0.113.7\n');
    expect(Date.parse(changed.headers['last-modified']!)).toBeGreaterThan(Date.parse(lastModified));
    expect((await curl([...auth, '--cacert', ca, '-z', lastModified, `${base}/feeds/rampart.txt`])).status).toBe(200);

    const head = await curl([...auth, '--cacert', ca, '-I', `${base}/feeds/rampart.txt`]);
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(changed.body.length));

    const status = e.status().parts[0]!;
    expect(status).toMatchObject({ name: 'rampart', path: '/feeds/rampart.txt', enforced: 3, cut: 0, capacity: 50_000, fetch_overdue: false });
    expect(status.last_fetch).toMatchObject({ client: '127.0.0.1', status: 200, user_agent: expect.stringMatching(/^curl\//) });
    expect(status.fetches).toBe(4);
    expect(status.not_modified).toBe(4);
  });

  it('verifies by IP address too, and node fetch trusting only that certificate gets the same answers', async () => {
    const byIp = await curl([...auth, '--cacert', ca, `https://127.0.0.1:${portOf(e)}/feeds/rampart.txt`]);
    expect(byIp.status).toBe(200);
    const basic = `Basic ${Buffer.from('rampart:feed-pass-1').toString('base64')}`;
    const got = await nodeFetch(`${base}/feeds/rampart.txt`, ca, { authorization: basic });
    expect(got).toEqual({ status: 200, etag: byIp.headers.etag, body: byIp.body });
    const again = await nodeFetch(`${base}/feeds/rampart.txt`, ca, { authorization: basic, 'if-none-match': got.etag! });
    expect(again.status).toBe(304);
    // Without the pin the certificate is refused.
    await expect(curl([...auth, `${base}/feeds/rampart.txt`])).rejects.toThrow(/certificate/);
    expect((await curl([...auth, '-k', `${base}/feeds/rampart.txt`])).status).toBe(200);
  });

  it('refuses a wrong password or user with 401 and WWW-Authenticate, whatever the path, and counts it', async () => {
    const before = e.status().auth_failures.count;
    for (const args of [['-u', 'rampart:wrong'], ['-u', 'admin:feed-pass-1'], []]) {
      const r = await curl([...args, '--cacert', ca, `${base}/feeds/rampart.txt`]);
      expect(r.status).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Basic realm="rampart feeds", charset="UTF-8"');
    }
    expect((await curl(['-u', 'rampart:wrong', '--cacert', ca, `${base}/feeds/nope.txt`])).status).toBe(401);
    expect(e.status().auth_failures).toMatchObject({ count: before + 4, last: { client: '127.0.0.1' } });
    expect(log.lines.filter((l) => l.msg === 'feed request refused: wrong or missing credentials')).toHaveLength(before + 4);
    expect((await curl([...auth, '--cacert', ca, `${base}/feeds/nope.txt`])).status).toBe(404);
    expect((await curl([...auth, '--cacert', ca, `${base}/other`])).status).toBe(404);
    const post = await curl([...auth, '--cacert', ca, '-X', 'POST', `${base}/feeds/rampart.txt`]);
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('serves an empty list after withdraw, never a 404, and reads back what a device gets', async () => {
    await e.sync([{ value: '192.0.2.9/32', score: 1 }]);
    expect(await e.list()).toEqual(['192.0.2.9/32']);
    await e.withdraw();
    const r = await curl([...auth, '--cacert', ca, `${base}/feeds/rampart.txt`]);
    expect(r.status).toBe(200);
    expect(r.body).toBe('');
    expect(r.headers['content-length']).toBe('0');
    expect(await e.list()).toEqual([]);
  });

  it('keeps the generated certificate across restarts, so a pinned device keeps trusting it', async () => {
    const fingerprint = e.status().certificate.sha256_fingerprint;
    expect(e.status().certificate).toMatchObject({ source: 'self-signed', cert_file: ca });
    expect((await stat(join(dir, 'tls', 'key.pem'))).mode & 0o777).toBe(0o600);
    const second = await open(dir);
    try {
      expect(second.status().certificate.sha256_fingerprint).toBe(fingerprint);
    } finally {
      await second.close();
    }
  });
});

describe('a fetch during a rewrite gets one whole version', () => {
  it('never returns a torn or mixed file to concurrent fetches while the list is rewritten', async () => {
    const dir = await tempDir();
    const e = await open(dir);
    try {
      const ca = await readFile(join(dir, 'tls', 'cert.pem'), 'utf8');
      // Versions of different sizes (so a torn read shows as a wrong length or hash).
      const versions = [conformanceAddresses(20_000), conformanceAddresses(5_000, 30_000), conformanceAddresses(12_000, 60_000)];
      const bodies = new Map<string, string>();
      for (const v of versions) {
        const body = canonicalBody(v);
        bodies.set(etagOf(body), body);
      }
      await e.sync(versions[0]!);
      let writing = true;
      const writer = (async () => {
        for (let i = 1; i <= 24; i++) await e.sync(versions[i % versions.length]!);
        writing = false;
      })();
      const seen = new Map<string, number>();
      const fetcher = async () => {
        let fetches = 0;
        while (writing || fetches === 0) {
          const r = await httpsGet(portOf(e), '/feeds/rampart.txt', ca, 'rampart:feed-pass-1');
          expect(r.status).toBe(200);
          // The body is exactly one of the versions, and its ETag is that version's.
          expect(bodies.get(r.etag)).toBe(r.body);
          seen.set(r.etag, (seen.get(r.etag) ?? 0) + 1);
          fetches += 1;
        }
        return fetches;
      };
      const counts = await Promise.all([fetcher(), fetcher(), fetcher(), fetcher()]);
      await writer;
      expect(counts.every((n) => n > 0)).toBe(true);
      expect([...seen.keys()].every((tag) => bodies.has(tag))).toBe(true);
    } finally {
      await e.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** The body the feed serves for `entries`, written independently of feedBody: CIDR order, /32 bare. */
function canonicalBody(entries: { value: string; score: number }[]): string {
  return sortCidrs(entries.map((x) => x.value))
    .map((c) => `${c.endsWith('/32') ? c.slice(0, -3) : c}\n`)
    .join('');
}

describe('capacity per feed', () => {
  it('cuts each feed to its capacity by score, counts the cut per feed and announces it once', async () => {
    const dir = await tempDir();
    const log = recordingLogger();
    const e = await open(dir, { feeds: 'big,small', options: { max_entries: 4, feed_max_entries: { small: 2 } } }, log);
    try {
      expect(e.capacity).toBe(4);
      const scores = [50, 700, 10, 300, 900, 20];
      const desired = scores.map((score, i) => ({ value: `192.0.2.${i + 1}/32`, score }));
      expect(await e.sync(desired)).toMatchObject({ enforced: 4, cut: 2 });
      expect(await readFile(join(dir, 'big.txt'), 'utf8')).toBe('192.0.2.1\n192.0.2.2\n192.0.2.4\n192.0.2.5\n');
      expect(await readFile(join(dir, 'small.txt'), 'utf8')).toBe('192.0.2.2\n192.0.2.5\n');
      expect(e.status().parts.map((f) => [f.name, f.capacity, f.enforced, f.cut])).toEqual([
        ['big', 4, 4, 2],
        ['small', 2, 2, 4],
      ]);
      expect(engineStats(e)).toMatchObject({ enforced: 4, cut: 2 });
      const announced = () => log.lines.filter((l) => l.level === 'warn').map((l) => [l.msg, l.data]);
      expect(announced()).toEqual([
        ['feed capacity reached; lowest scores cut', { feed: 'small', cut: 2, capacity: 2 }],
        ['capacity reached; lowest scores cut', { cut: 2, capacity: 4 }],
      ]);
      // A higher score enters both feeds; the same cut is not announced again.
      await e.apply({ add: [{ value: '198.51.100.1/32', score: 1000 }], remove: [] });
      expect(await readFile(join(dir, 'small.txt'), 'utf8')).toBe('192.0.2.5\n198.51.100.1\n');
      expect(announced()).toHaveLength(3);
      // Any one file changed behind the agent's back is drift, repaired whole.
      await unlink(join(dir, 'small.txt'));
      expect(await e.reconcile!()).toMatchObject({ drifted: true, enforced: 4 });
      expect(await readFile(join(dir, 'small.txt'), 'utf8')).toBe('192.0.2.5\n198.51.100.1\n');
      expect(await e.reconcile!()).toMatchObject({ drifted: false });
    } finally {
      await e.withdraw();
      await e.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('serves csp with its own defaults from the same implementation', async () => {
    const dir = await tempDir();
    const e = (await cspFeedEnforcer.create(feedConfig(dir, {}, 'csp'), { log: recordingLogger() })) as FeedServerEnforcer;
    try {
      expect(e.capacity).toBe(128_000);
      expect(e.status()).toMatchObject({ label: 'csp', updates_minutes: 5, username: 'rampart' });
    } finally {
      await e.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('feed-server start', () => {
  it('serves a configured certificate, and fails to start on a port in use, naming it', async () => {
    const dir = await tempDir();
    const made = selfSignedCertificate(['localhost'], 10);
    await writeFile(join(dir, 'own.pem'), made.certPem);
    await writeFile(join(dir, 'own.key'), made.keyPem, { mode: 0o600 });
    const first = await open(dir, { options: { cert_file: join(dir, 'own.pem'), key_file: join(dir, 'own.key') } });
    try {
      expect(first.status().certificate).toMatchObject({ source: 'configured', cert_file: join(dir, 'own.pem'), sha256_fingerprint: new X509Certificate(made.certPem).fingerprint256 });
      await first.sync([{ value: '192.0.2.1/32', score: 1 }]);
      const got = await curl(['-u', 'rampart:feed-pass-1', '--cacert', join(dir, 'own.pem'), `https://localhost:${portOf(first)}/feeds/rampart.txt`]);
      expect(got.body).toBe('192.0.2.1\n');
      await expect(open(dir, { options: { listen_port: portOf(first) } })).rejects.toThrow(`listen EADDRINUSE: address already in use 127.0.0.1:${portOf(first)}`);
    } finally {
      await first.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// Each test gets its own directory and port; `reopen` serves the same directory on another port.
enforcerConformance('feed-server (HTTPS feed files)', async ({ capacity }) => {
  const dir = await tempDir();
  const extra = capacity ? { options: { max_entries: capacity } } : {};
  const opened: FeedServerEnforcer[] = [];
  const make = async () => {
    const e = await open(dir, extra);
    opened.push(e);
    return e;
  };
  const enforcer = await make();
  return {
    enforcer,
    reopen: make,
    disturb: () => unlink(join(dir, 'rampart.txt')),
    teardown: async () => {
      for (const e of opened) await e.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});
