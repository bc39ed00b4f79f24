import { describe, expect, it } from 'vitest';
import {
  FlatParams,
  FlatQuery,
  IpLookupQuery,
  IpParams,
  IpsFeedQuery,
  IpsReportBody,
  Ipv4ListParams,
  Ipv4ListQuery,
} from './index.ts';

const ok = (schema: { safeParse(v: unknown): { success: boolean } }, value: unknown) => schema.safeParse(value).success;

describe('GET /flat/{min_score}', () => {
  it('bounds 1 and 1000 are exclusive', () => {
    expect(ok(FlatParams, { min_score: '1' })).toBe(false);
    expect(ok(FlatParams, { min_score: '1000' })).toBe(false);
    expect(FlatParams.parse({ min_score: '2' })).toEqual({ min_score: 2 });
    expect(FlatParams.parse({ min_score: '999' })).toEqual({ min_score: 999 });
    expect(ok(FlatParams, { min_score: 'abc' })).toBe(false);
  });

  it('list is YES|NO, default NO', () => {
    expect(FlatQuery.parse({})).toEqual({ list: 'NO' });
    expect(FlatQuery.parse({ list: 'YES' })).toEqual({ list: 'YES' });
    expect(ok(FlatQuery, { list: 'yes' })).toBe(false);
  });
});

describe('GET /ipv4/{min_score}', () => {
  it('bounds 0 and 1001 are exclusive', () => {
    expect(ok(Ipv4ListParams, { min_score: '0' })).toBe(false);
    expect(ok(Ipv4ListParams, { min_score: '1001' })).toBe(false);
    expect(Ipv4ListParams.parse({ min_score: '1' })).toEqual({ min_score: 1 });
    expect(Ipv4ListParams.parse({ min_score: '1000' })).toEqual({ min_score: 1000 });
  });

  it('query: format, agid, plugin, page', () => {
    expect(Ipv4ListQuery.parse({})).toEqual({ format: 'CSV' });
    const query = { format: 'LIST', agid: 'RMP-AGENT-ID-4F2A9C7E1B', plugin: 'packet_filter', page: 'c2VjcmV0' };
    expect(Ipv4ListQuery.parse(query)).toEqual(query);
    expect(ok(Ipv4ListQuery, { format: 'JSON' })).toBe(false);
    expect(ok(Ipv4ListQuery, { page: '' })).toBe(false);
  });
});

describe('GET /ips', () => {
  it('defaults: page_size 50, ts 0, full no', () => {
    expect(IpsFeedQuery.parse({})).toEqual({ page_size: 50, ts: 0, full: 'no' });
  });

  it('page_size bounds 0 and 1001 are exclusive', () => {
    expect(ok(IpsFeedQuery, { page_size: '0' })).toBe(false);
    expect(ok(IpsFeedQuery, { page_size: '1001' })).toBe(false);
    expect(IpsFeedQuery.parse({ page_size: '1' }).page_size).toBe(1);
    expect(IpsFeedQuery.parse({ page_size: '1000' }).page_size).toBe(1000);
  });

  it('ts is an integer greater than -1', () => {
    expect(ok(IpsFeedQuery, { ts: '-1' })).toBe(false);
    expect(ok(IpsFeedQuery, { ts: '1.5' })).toBe(false);
    expect(IpsFeedQuery.parse({ ts: '0', full: 'yes' })).toEqual({ page_size: 50, ts: 0, full: 'yes' });
    expect(IpsFeedQuery.parse({ ts: '1717171717' }).ts).toBe(1717171717);
  });
});

describe('GET /ips/{ipv4}', () => {
  it('takes one IPv4 address', () => {
    expect(IpParams.parse({ ipv4: '203.0.113.7' })).toEqual({ ipv4: '203.0.113.7' });
    expect(ok(IpParams, { ipv4: '203.0.113.0/24' })).toBe(false);
    expect(ok(IpParams, { ipv4: '256.1.1.1' })).toBe(false);
    expect(ok(IpParams, { ipv4: '::1' })).toBe(false);
  });

  it('look-up query defaults', () => {
    expect(IpLookupQuery.parse({})).toEqual({ full: 'no', explain: 'no' });
    expect(IpLookupQuery.parse({ explain: 'yes' })).toEqual({ full: 'no', explain: 'yes' });
  });
});

describe('POST /ips', () => {
  const report = { ip: '203.0.113.7', confidence: 0.8, source: 'ssh_log' };

  it('applies the decision default and strips unknown fields such as lid', () => {
    expect(IpsReportBody.parse({ ...report, lid: 42, notes: 'failed logins' })).toEqual({
      ...report,
      notes: 'failed logins',
      decision: -1,
    });
  });

  it('accepts a network and numeric strings', () => {
    expect(IpsReportBody.parse({ ip: '198.51.100.0/24', confidence: '1', source: 's', decision: '1', ttl: '1800000000' })).toEqual({
      ip: '198.51.100.0/24',
      confidence: 1,
      source: 's',
      decision: 1,
      ttl: 1800000000,
    });
  });

  it('requires ip, confidence and source', () => {
    expect(ok(IpsReportBody, { confidence: 1, source: 's' })).toBe(false);
    expect(ok(IpsReportBody, { ip: '203.0.113.7', source: 's' })).toBe(false);
    expect(ok(IpsReportBody, { ip: '203.0.113.7', confidence: 1 })).toBe(false);
    expect(ok(IpsReportBody, { ...report, source: '' })).toBe(false);
    expect(ok(IpsReportBody, { ...report, ip: 'example.com' })).toBe(false);
  });

  it('confidence is 0..1', () => {
    expect(ok(IpsReportBody, { ...report, confidence: -0.01 })).toBe(false);
    expect(ok(IpsReportBody, { ...report, confidence: 1.01 })).toBe(false);
    expect(IpsReportBody.parse({ ...report, confidence: 0 }).confidence).toBe(0);
    expect(IpsReportBody.parse({ ...report, confidence: 1 }).confidence).toBe(1);
  });

  it('decision bounds -2 and 2 are exclusive, integer, never coerced from null or booleans', () => {
    expect(ok(IpsReportBody, { ...report, decision: -2 })).toBe(false);
    expect(ok(IpsReportBody, { ...report, decision: 2 })).toBe(false);
    expect(ok(IpsReportBody, { ...report, decision: 0.5 })).toBe(false);
    expect(ok(IpsReportBody, { ...report, decision: null })).toBe(false);
    expect(ok(IpsReportBody, { ...report, decision: true })).toBe(false);
    expect(ok(IpsReportBody, { ...report, decision: '' })).toBe(false);
    expect(ok(IpsReportBody, { ...report, decision: 'one' })).toBe(false);
    expect(IpsReportBody.parse({ ...report, decision: -1 }).decision).toBe(-1);
    expect(IpsReportBody.parse({ ...report, decision: '0' }).decision).toBe(0);
    expect(IpsReportBody.parse({ ...report, decision: 1 }).decision).toBe(1);
  });

  it('ttl is a positive integer', () => {
    expect(ok(IpsReportBody, { ...report, ttl: 0 })).toBe(false);
    expect(ok(IpsReportBody, { ...report, ttl: 1.5 })).toBe(false);
    expect(IpsReportBody.parse({ ...report, ttl: 1 }).ttl).toBe(1);
  });

  it('notes are bounded', () => {
    expect(ok(IpsReportBody, { ...report, notes: 'x'.repeat(4097) })).toBe(false);
    expect(ok(IpsReportBody, { ...report, notes: 'x'.repeat(4096) })).toBe(true);
  });
});
