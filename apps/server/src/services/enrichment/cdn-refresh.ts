import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ipaddr from 'ipaddr.js';
import { isIpv4 } from '@rampart/contracts';
import { cdnFilePath, CDN_FILE_NAME } from './enrichment.ts';
import { readCdnDataFile, type CdnDataFile, type CdnRefreshSource } from './cdn-data.ts';

/** Published lists are at most a few MB (Azure's service tags ~5 MB); anything larger is refused. */
const MAX_BYTES = 32 * 1024 * 1024;

export interface CdnRefreshOptions {
  dataDir: string;
  /** Refresh URLs by provider name, replacing those of the data file. */
  overrides?: Record<string, CdnRefreshSource[]> | undefined;
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
  now?: Date;
}

export interface ProviderOutcome {
  name: string;
  status: 'refreshed' | 'kept';
  addresses: number;
  reason?: string;
}

export interface CdnRefreshResult {
  file: string;
  date: string;
  providers: ProviderOutcome[];
}

// IPv4 by the shared strict grammar (ipaddr.js reads 010.0.0.1 as octal, which the index would
// then drop); ipaddr.js decides IPv6 only.
const isRange = (value: string): boolean => isIpv4(value) || (value.includes(':') && (ipaddr.isValidCIDR(value) || ipaddr.isValid(value)));

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The addresses one published document lists, read according to its format. */
export function parsePublishedList(text: string, source: CdnRefreshSource): string[] {
  if (source.format === 'lines') return text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  const doc = JSON.parse(text) as Record<string, unknown>;
  switch (source.format) {
    case 'fastly':
      return [...strings(doc.addresses), ...strings(doc.ipv6_addresses)];
    case 'aws': {
      const rows = [...(Array.isArray(doc.prefixes) ? doc.prefixes : []), ...(Array.isArray(doc.ipv6_prefixes) ? doc.ipv6_prefixes : [])] as Array<Record<string, unknown>>;
      return rows.filter((r) => !source.service || r.service === source.service).map((r) => String(r.ip_prefix ?? r.ipv6_prefix ?? ''));
    }
    case 'google':
      return ((Array.isArray(doc.prefixes) ? doc.prefixes : []) as Array<Record<string, unknown>>).map((r) => String(r.ipv4Prefix ?? r.ipv6Prefix ?? ''));
    case 'azure': {
      const tags = (Array.isArray(doc.values) ? doc.values : []) as Array<{ name?: unknown; properties?: { addressPrefixes?: unknown } }>;
      const wanted = tags.filter((t) => typeof t.name === 'string' && (!source.service || t.name === source.service || t.name.startsWith(`${source.service}.`)));
      return wanted.flatMap((t) => strings(t.properties?.addressPrefixes));
    }
  }
  return [];
}

async function fetchList(url: string, timeoutMs: number): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
  if (!res.ok) throw new Error(`HTTP ${res.status} from ${url}`);
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > MAX_BYTES) throw new Error(`${url} is larger than ${MAX_BYTES} bytes`);
  const text = await res.text();
  if (text.length > MAX_BYTES) throw new Error(`${url} is larger than ${MAX_BYTES} bytes`);
  return text;
}

/** Every address of one provider's sources; throws when any source fails or lists nothing valid. */
async function providerAddresses(sources: CdnRefreshSource[], env: Record<string, string | undefined>, timeoutMs: number): Promise<string[]> {
  const out = new Set<string>();
  for (const source of sources) {
    const url = source.url.startsWith('env:') ? env[source.url.slice(4)] : source.url;
    if (!url) throw new Error(`${source.url.slice(4)} is not set`);
    const listed = parsePublishedList(await fetchList(url, timeoutMs), source);
    const bad = listed.filter((a) => !isRange(a));
    if (bad.length > 0) throw new Error(`${url} lists ${bad.length} entries that are not addresses or CIDRs (first: ${JSON.stringify(bad[0]!.slice(0, 60))})`);
    if (listed.length === 0) throw new Error(`${url} lists no addresses`);
    for (const a of listed) out.add(a);
  }
  return [...out];
}

/**
 * `rampart cdn refresh`: fetches each provider's published list and writes DATA_DIR/cdn-ranges.json.
 * A provider whose list cannot be fetched or read keeps its previous ranges (never emptied);
 * the servers read the file when they start.
 */
export async function refreshCdnRanges(options: CdnRefreshOptions): Promise<CdnRefreshResult> {
  const current = readCdnDataFile(cdnFilePath({ dataDir: options.dataDir }));
  const env = options.env ?? process.env;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const outcomes: ProviderOutcome[] = [];
  const providers: CdnDataFile['providers'] = [];
  for (const provider of current.providers) {
    const sources = options.overrides?.[provider.name] ?? provider.refresh;
    if (sources.length === 0) {
      outcomes.push({ name: provider.name, status: 'kept', addresses: provider.addresses.length, reason: 'no published list to fetch' });
      providers.push(provider);
      continue;
    }
    try {
      const addresses = await providerAddresses(sources, env, timeoutMs);
      providers.push({ ...provider, addresses });
      outcomes.push({ name: provider.name, status: 'refreshed', addresses: addresses.length });
    } catch (err) {
      providers.push(provider);
      outcomes.push({ name: provider.name, status: 'kept', addresses: provider.addresses.length, reason: err instanceof Error ? err.message : String(err) });
    }
  }
  const date = (options.now ?? new Date()).toISOString().slice(0, 10);
  const refreshed = outcomes.filter((o) => o.status === 'refreshed').map((o) => o.name);
  const next: CdnDataFile = {
    ...current,
    date,
    note: `Refreshed by \`rampart cdn refresh\` on ${date}: ${refreshed.length ? refreshed.join(', ') : 'no provider'} fetched from the published lists; the others kept the ranges of the previous file (${current.date}).`,
    providers,
  };
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const file = join(options.dataDir, CDN_FILE_NAME);
  // Written beside and renamed: a server starting meanwhile reads the old or the new file, never half.
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  renameSync(temp, file);
  return { file, date, providers: outcomes };
}
