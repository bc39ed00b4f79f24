import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnrichment } from '../../src/services/enrichment/enrichment.ts';
import { readCdnDataFile, SHIPPED_CDN_FILE } from '../../src/services/enrichment/cdn-data.ts';
import { refreshCdnRanges } from '../../src/services/enrichment/cdn-refresh.ts';

/** The providers' published documents, in their own formats, served on 127.0.0.1. */
const DOCUMENTS: Record<string, string> = {
  '/ips-v4': '203.0.113.0/25\n198.51.100.0/24\n',
  '/ips-v6': '2001:db8:cf::/48\n',
  '/fastly': JSON.stringify({ addresses: ['192.0.2.0/26'], ipv6_addresses: ['2001:db8:f::/48'] }),
  '/aws': JSON.stringify({
    syncToken: '1',
    prefixes: [
      { ip_prefix: '192.0.2.64/26', region: 'GLOBAL', service: 'CLOUDFRONT' },
      { ip_prefix: '192.0.2.128/26', region: 'us-east-1', service: 'EC2' },
    ],
    ipv6_prefixes: [{ ipv6_prefix: '2001:db8:a::/48', region: 'GLOBAL', service: 'CLOUDFRONT' }],
  }),
  '/goog': JSON.stringify({ prefixes: [{ ipv4Prefix: '198.18.0.0/16' }, { ipv6Prefix: '2001:db8:9::/48' }] }),
  '/azure': JSON.stringify({
    values: [
      { name: 'AzureFrontDoor.Frontend', properties: { addressPrefixes: ['198.19.0.0/24'] } },
      { name: 'AzureFrontDoor.Backend', properties: { addressPrefixes: ['198.19.1.0/24'] } },
      { name: 'AzureCloud', properties: { addressPrefixes: ['198.19.2.0/24'] } },
    ],
  }),
  // 010.0.0.0/8 is octal 8.0.0.0/8 to ipaddr.js: refused like any spelling outside the grammar.
  '/garbage': 'not-an-address\n10.0.0.0/8\n010.0.0.0/8\n',
};

let server: Server;
let base: string;
const requested: string[] = [];
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'rampart-cdnr-'));
  dirs.push(d);
  return d;
};

function sources(): Record<string, Array<{ url: string; format: 'lines' | 'fastly' | 'aws' | 'google' | 'azure'; service?: string }>> {
  return {
    Cloudflare: [{ url: `${base}/ips-v4`, format: 'lines' }, { url: `${base}/ips-v6`, format: 'lines' }],
    Fastly: [{ url: `${base}/fastly`, format: 'fastly' }],
    'Amazon CloudFront': [{ url: `${base}/aws`, format: 'aws', service: 'CLOUDFRONT' }],
    Google: [{ url: `${base}/goog`, format: 'google' }],
    'Microsoft Azure Front Door': [{ url: 'env:TEST_AZURE_URL', format: 'azure', service: 'AzureFrontDoor' }],
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    requested.push(req.url ?? '');
    const body = DOCUMENTS[req.url ?? ''];
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/plain' }).end(body ?? 'no such list');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('refreshCdnRanges', () => {
  it('replaces each provider from its published list, keeps the ones without a list, and the server index follows', async () => {
    const dataDir = tempDir();
    const result = await refreshCdnRanges({ dataDir, overrides: sources(), env: { TEST_AZURE_URL: `${base}/azure` }, now: new Date('2031-05-06T10:00:00Z') });
    const shipped = readCdnDataFile(SHIPPED_CDN_FILE);
    const count = (name: string) => shipped.providers.find((p) => p.name === name)!.addresses.length;
    expect(result).toEqual({
      file: join(dataDir, 'cdn-ranges.json'),
      date: '2031-05-06',
      providers: [
        { name: 'Cloudflare', status: 'refreshed', addresses: 3 },
        { name: 'Fastly', status: 'refreshed', addresses: 2 },
        { name: 'Amazon CloudFront', status: 'refreshed', addresses: 2 },
        { name: 'Akamai', status: 'kept', addresses: count('Akamai'), reason: 'no published list to fetch' },
        { name: 'Google', status: 'refreshed', addresses: 2 },
        { name: 'Microsoft Azure Front Door', status: 'refreshed', addresses: 2 },
        { name: 'Imperva Incapsula', status: 'kept', addresses: count('Imperva Incapsula'), reason: 'no published list to fetch' },
        { name: 'Sucuri', status: 'kept', addresses: count('Sucuri'), reason: 'no published list to fetch' },
      ],
    });
    const written = readCdnDataFile(result.file);
    expect(written.date).toBe('2031-05-06');
    expect(written.providers.find((p) => p.name === 'Amazon CloudFront')!.addresses).toEqual(['192.0.2.64/26', '2001:db8:a::/48']);
    expect(written.providers.find((p) => p.name === 'Microsoft Azure Front Door')!.addresses).toEqual(['198.19.0.0/24', '198.19.1.0/24']);

    const enrichment = createEnrichment({ dataDir });
    expect(enrichment.cdnList().date).toBe('2031-05-06');
    expect(enrichment.cdnOf('203.0.113.9')).toBe('Cloudflare');
    expect(enrichment.cdnOf('203.0.113.200')).toBeNull();
    expect(enrichment.cdnOf('192.0.2.70')).toBe('Amazon CloudFront');
    expect(enrichment.cdnOf('192.0.2.130')).toBeNull();
    expect(enrichment.cdnOf('198.19.2.1')).toBeNull();
    expect(enrichment.cdnOf('2001:db8:f::1')).toBe('Fastly');
    expect(enrichment.cdnOf('104.16.0.1')).toBeNull();
    expect(enrichment.cdnOf('23.32.0.1')).toBe('Akamai');
  });

  it('keeps a provider\'s ranges when its list is missing, malformed or its URL variable unset', async () => {
    const dataDir = tempDir();
    const result = await refreshCdnRanges({
      dataDir,
      overrides: {
        Cloudflare: [{ url: `${base}/gone`, format: 'lines' }],
        Fastly: [{ url: `${base}/garbage`, format: 'lines' }],
        'Amazon CloudFront': [{ url: `${base}/aws`, format: 'aws', service: 'CLOUDFRONT' }],
        Google: [{ url: `${base}/goog`, format: 'google' }],
        'Microsoft Azure Front Door': [{ url: 'env:TEST_AZURE_URL', format: 'azure', service: 'AzureFrontDoor' }],
      },
      env: {},
    });
    const byName = Object.fromEntries(result.providers.map((p) => [p.name, p]));
    expect(byName.Cloudflare).toEqual({ name: 'Cloudflare', status: 'kept', addresses: 22, reason: `HTTP 404 from ${base}/gone` });
    expect(byName.Fastly).toEqual({ name: 'Fastly', status: 'kept', addresses: 21, reason: `${base}/garbage lists 2 entries that are not addresses or CIDRs (first: "not-an-address")` });
    expect(byName['Microsoft Azure Front Door']).toMatchObject({ status: 'kept', reason: 'TEST_AZURE_URL is not set' });
    expect(byName['Amazon CloudFront']).toEqual({ name: 'Amazon CloudFront', status: 'refreshed', addresses: 2 });
    const enrichment = createEnrichment({ dataDir });
    expect(enrichment.cdnOf('104.16.0.1')).toBe('Cloudflare');
    expect(enrichment.cdnOf('151.101.1.1')).toBe('Fastly');
  });
});

/** The CLI as a child process; asynchronous, because the lists it fetches are served by this process. */
function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: fileURLToPath(new URL('../..', import.meta.url)), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

describe('rampart cdn refresh (the CLI as a process)', () => {
  it('fetches the configured URLs and writes DATA_DIR/cdn-ranges.json', async () => {
    const dataDir = tempDir();
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    const run = await cli(['cdn', 'refresh', '--timeout', '5000'], { ...rest, DATA_DIR: dataDir, CDN_REFRESH_SOURCES: JSON.stringify(sources()), TEST_AZURE_URL: `${base}/azure` });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const out = JSON.parse(run.stdout) as { file: string; providers: Array<{ name: string; status: string }> };
    expect(out.file).toBe(join(dataDir, 'cdn-ranges.json'));
    expect(out.providers.filter((p) => p.status === 'refreshed').map((p) => p.name)).toEqual(['Cloudflare', 'Fastly', 'Amazon CloudFront', 'Google', 'Microsoft Azure Front Door']);
    expect(JSON.parse(readFileSync(out.file, 'utf8')).providers[0].addresses).toEqual(['203.0.113.0/25', '198.51.100.0/24', '2001:db8:cf::/48']);
  });

  it('refuses a malformed CDN_REFRESH_SOURCES naming the variable', async () => {
    const run = await cli(['cdn', 'refresh'], { ...process.env, DATA_DIR: tempDir(), CDN_REFRESH_SOURCES: '{"Cloudflare":[{"url":"x","format":"xml"}]}' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('CDN_REFRESH_SOURCES.Cloudflare.0.format');
  });
});
