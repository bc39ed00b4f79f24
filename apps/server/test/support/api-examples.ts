// The contracts package's sample documents; not on its public surface, shared here on purpose so
// that the examples the robustness test sends are the ones the contracts are tested with.
import { sampleAgentConfig, sampleDomainRecord, sampleFileRecord, sampleUrlRecord } from '@rampart/contracts/fixtures';
import { isNumeric, pathParams, queryParams, type ApiOperation, type ApiParameter, type JsonSchema } from './openapi-operations.ts';

/** Objects of the calling organization that path parameters can name. */
export interface OwnedIds {
  agid: string;
  tokenId: string;
  vid: string;
  keyId: string;
  /** The organization's gid (operator routes name organizations). */
  gid: string;
}

/** Valid values of path parameters, by name; ids come from the organization's own objects. */
const PATH_VALUES: Record<string, (ids: OwnedIds) => string> = {
  ipv4: () => '45.77.113.7',
  ip: () => '45.77.113.7',
  domain_name: () => sampleDomainRecord.domain,
  url: () => sampleUrlRecord.url,
  digest: () => sampleFileRecord.sha256,
  stix2id: () => '45.77.113.7',
  agid: (ids) => ids.agid,
  token_id: (ids) => ids.tokenId,
  vid: (ids) => ids.vid,
  key_id: (ids) => ids.keyId,
  gid: (ids) => ids.gid,
};

/** Valid path values as long as their schema allows, by name (longer than fastify's default 100-character parameter). */
const LONG_PATH_VALUES: Record<string, (maxLength: number) => string> = {
  // Three 63-letter labels, one filling up to the maximum, and a TLD: 3 * 64 + (max - 196) + 4 = max.
  domain_name: (max) => `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(max - 196)}.com`,
  url: (max) => `https://a.example/${'x'.repeat(max - 18)}`,
  vid: (max) => `RMP-VID-LIC${'A'.repeat(max - 11)}`,
  agid: (max) => `RMP-AGENT-ID-${'A'.repeat(max - 13)}`,
  // A stix2id names an IPv4, domain, URL or digest; the longest form is a URL.
  stix2id: (max) => `https://a.example/${'x'.repeat(max - 18)}`,
};

/** A valid value of the parameter at its declared maximum length, when one is known. */
export function longPathValue(p: ApiParameter): string | undefined {
  if (p.schema.maxLength === undefined) return undefined;
  const named = LONG_PATH_VALUES[p.name];
  if (named) return named(p.schema.maxLength);
  return p.schema.pattern || p.schema.format || p.schema.allOf ? undefined : 'x'.repeat(p.schema.maxLength);
}

/** A number strictly inside the schema's bounds (integer when the schema wants one). */
export function numberInside(s: JsonSchema): number {
  const low = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 0);
  const high = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : low + 1000);
  return Math.floor((low + high) / 2);
}

/** A valid scalar for a schema that has no better example: default, first enum value, a number inside the bounds. */
export function schemaExample(s: JsonSchema): unknown {
  if (s.default !== undefined) return s.default;
  if (s.enum) return s.enum[0];
  if (s.const !== undefined) return s.const;
  if (isNumeric(s)) return numberInside(s);
  if (s.type === 'boolean') return true;
  if (s.type === 'string' && !s.pattern && !s.format) return 'example'.padEnd(s.minLength ?? 0, 'x').slice(0, s.maxLength ?? 7);
  return undefined;
}

export function examplePathValue(op: ApiOperation, p: ApiParameter, ids: OwnedIds): string {
  const named = PATH_VALUES[p.name];
  if (named) return named(ids);
  const value = schemaExample(p.schema);
  if (value === undefined) throw new Error(`${op.id}: add a valid example for path parameter ${p.name} to test/support/api-examples.ts`);
  return String(value);
}

/** Valid path values of an operation, URL-encoded. */
export function examplePath(op: ApiOperation, ids: OwnedIds): Record<string, string> {
  return Object.fromEntries(pathParams(op).map((p) => [p.name, encodeURIComponent(examplePathValue(op, p, ids))]));
}

/** Valid values of the operation's required query parameters, URL-encoded. */
export function exampleQuery(op: ApiOperation): Array<[string, string]> {
  return queryParams(op)
    .filter((p) => p.required)
    .map((p) => {
      const value = schemaExample(p.schema);
      if (value === undefined) throw new Error(`${op.id}: add a valid example for query parameter ${p.name} to test/support/api-examples.ts`);
      return [p.name, encodeURIComponent(String(value))];
    });
}

/** One valid request body per operation that takes one, by `METHOD path`. */
const BODIES: Record<string, (ids: OwnedIds) => unknown> = {
  'POST /api/v1/vpn': () => ({ account_name: 'laptop-ada', notes: 'travel laptop' }),
  'POST /api/v1/keys': () => ({ label: 'robustness probe' }),
  'POST /api/v1/crowdsec/v1/usage-metrics': () => ({ remediation_components: [{ type: 'crowdsec-firewall-bouncer', version: 'v0.0.25', metrics: [] }] }),
  'POST /api/v1/import': () => ({ format: 'csv', content: 'value,kind,confidence,source\n45.77.113.7,ipv4,0.9,ssh_log\n', dry_run: true }),
  'POST /api/v1/ips': () => ({ ip: '45.77.113.7', confidence: 0.9, source: 'ssh_log', notes: 'brute force on port 22' }),
  // CrowdSec watchers: what crowdsec 1.4.6 sends (the caller is no watcher here: 401 after validation).
  'POST /api/v1/crowdsec/v1/watchers': (ids) => ({ machine_id: ids.agid, password: 'Xe4FSqCfKjBmDKmmRLfhQ8rqJzv9p6ea' }),
  'POST /api/v1/crowdsec/v1/watchers/login': (ids) => ({ machine_id: ids.agid, password: 'Xe4FSqCfKjBmDKmmRLfhQ8rqJzv9p6ea', scenarios: ['crowdsecurity/ssh-bf'] }),
  'POST /api/v1/crowdsec/v1/alerts': () => [
    {
      capacity: 5,
      decisions: null,
      events: [{ meta: [{ key: 'source_ip', value: '45.77.113.7' }, { key: 'log_type', value: 'ssh_failed-auth' }], timestamp: '2025-03-01T00:00:01Z' }],
      events_count: 6,
      leakspeed: '10s',
      message: "Ip 45.77.113.7 performed 'crowdsecurity/ssh-bf' (6 events over 5s) at 2025-03-01 00:00:05 +0000 UTC",
      scenario: 'crowdsecurity/ssh-bf',
      scenario_hash: '4441dcff07020f6690d998b7101e642359ba405c2abb83565bbbdcee36de280f',
      scenario_version: '0.1',
      simulated: false,
      source: { ip: '45.77.113.7', range: '', scope: 'Ip', value: '45.77.113.7' },
      start_at: '2025-03-01T00:00:00Z',
      stop_at: '2025-03-01T00:00:05Z',
    },
  ],
  'POST /api/v1/files': () => ({
    md5: sampleFileRecord.md5,
    sha1: sampleFileRecord.sha1,
    sha256: sampleFileRecord.sha256,
    // The fixture's 'application/x-dosexec' is only an alternative name in GET /file_types, which POST /files refuses.
    file_type: 'application/vnd.microsoft.portable-executable',
    file_name: sampleFileRecord.file_name,
    tags: sampleFileRecord.tags,
    confidence: 0.8,
  }),
  'PUT /api/v1/ips/{ip}': () => ({ decision: 1, ttl: Math.floor(Date.now() / 1000) + 3600 }),
  'PUT /api/v1/files/{digest}': () => ({ decision: 1 }),
  'POST /api/v1/domains': () => ({ domain: sampleDomainRecord.domain, tags: sampleDomainRecord.tags, confidence: 0.7 }),
  'PUT /api/v1/domains/{domain_name}': () => ({ decision: 0 }),
  'POST /api/v1/urls': () => ({ url: sampleUrlRecord.url, tags: sampleUrlRecord.tags, confidence: 0.6 }),
  'PUT /api/v1/urls/{url}': () => ({ decision: -1 }),
  'POST /api/v1/agents': (ids) => ({ ...sampleAgentConfig, gaid: `${ids.agid}X` }),
  'POST /api/v1/agents/{agid}/token': () => ({ ttl_days: 30 }),
  'PUT /api/v1/agents/{agid}/config': (ids) => ({ ...sampleAgentConfig, gaid: ids.agid, running: 'yes' }),
  'POST /api/v1/agents/feedback': (ids) => ({ agid: ids.agid, plugin: 'packet_filter', hostname: 'fw-1', code: 0, score_threshold: 500, blacklist: ['45.77.113.7'] }),
  'POST /api/v1/operator/organizations': () => ({ name: `Probe ${Math.random().toString(36).slice(2)}`, trust: 0.4, delay: 0, credits: 10 }),
  'PATCH /api/v1/operator/organizations/{gid}': () => ({ trust: 0.5 }),
  'POST /api/v1/operator/organizations/{gid}/coins': () => ({ amount: 1, note: 'probe' }),
  'PUT /api/v1/organization/config': () => ({ live: {}, reserved_ips: ['192.0.2.0/24'], blocking_roule: { score: 500, tags: ['malware'] } }),
};

export function exampleBody(op: ApiOperation, ids: OwnedIds): unknown {
  if (!op.body) return undefined;
  const make = BODIES[op.id];
  if (!make) throw new Error(`${op.id}: add a valid example body to test/support/api-examples.ts`);
  return structuredClone(make(ids));
}
