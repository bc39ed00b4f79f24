import { describe, expect, it } from 'vitest';
import {
  DecisionBody,
  DomainLookupQuery,
  DomainParams,
  DomainReportBody,
  DomainsFeedQuery,
  DomainsScoreParams,
  DomainsScoreQuery,
  UrlLookupQuery,
  UrlParams,
  UrlReportBody,
  UrlsFeedQuery,
  UrlsScoreParams,
  UrlsScoreQuery,
} from './index.ts';

const ok = (schema: { safeParse(v: unknown): { success: boolean } }, value: unknown) => schema.safeParse(value).success;
const tags = (n: number) => Array.from({ length: n }, (_, i) => `tag${i}`);

describe('domain path parameter', () => {
  it.each(['example.com', 'a.b.example.co.uk', 'xn--bcher-kva.example', 'bücher.de', 'x-1.example.org', 'Example.COM.', `${'a'.repeat(63)}.com`])(
    'accepts %s',
    (domain_name) => expect(DomainParams.parse({ domain_name })).toEqual({ domain_name }),
  );

  it.each(['localhost', '203.0.113.7', '-a.com', 'a-.com', 'a..com', 'exa_mple.com', 'a.com..', '.a.com', `${'a'.repeat(64)}.com`, `${'a.'.repeat(126)}com`])(
    'rejects %s',
    (domain_name) => expect(ok(DomainParams, { domain_name })).toBe(false),
  );
});

describe('domain endpoints', () => {
  it('score list bounds and query', () => {
    expect(ok(DomainsScoreParams, { min_score: '1' })).toBe(false);
    expect(ok(DomainsScoreParams, { min_score: '1000' })).toBe(false);
    expect(DomainsScoreParams.parse({ min_score: '2' })).toEqual({ min_score: 2 });
    expect(DomainsScoreParams.parse({ min_score: '999' })).toEqual({ min_score: 999 });
    expect(ok(DomainsScoreQuery, {})).toBe(false);
    expect(DomainsScoreQuery.parse({ protocol: 'HTTPS' })).toEqual({ protocol: 'HTTPS', format: 'CSV' });
  });

  it('feed query', () => {
    expect(ok(DomainsFeedQuery, {})).toBe(false);
    expect(DomainsFeedQuery.parse({ ts: '10' })).toEqual({ ts: 10, page_size: 101 });
    expect(ok(DomainsFeedQuery, { ts: '10', page_size: '100' })).toBe(false);
    expect(ok(DomainsFeedQuery, { ts: '10', page_size: '2000' })).toBe(false);
    expect(DomainsFeedQuery.parse({ ts: '10', page_size: '1999' }).page_size).toBe(1999);
  });

  it('look-up query', () => {
    expect(DomainLookupQuery.parse({})).toEqual({ explain: 'no' });
  });

  it('PUT decision: integer -1..1, required (a body without it is 400, like /files), numeric strings accepted', () => {
    expect(ok(DecisionBody, {})).toBe(false);
    expect(DecisionBody.parse({ decision: '1' })).toEqual({ decision: 1 });
    expect(DecisionBody.parse({ decision: 0 })).toEqual({ decision: 0 });
    expect(ok(DecisionBody, { decision: -2 })).toBe(false);
    expect(ok(DecisionBody, { decision: 2 })).toBe(false);
    expect(ok(DecisionBody, { decision: null })).toBe(false);
  });

  it('report: confidence default 1, tags unique 1..10, file_type not enforced', () => {
    expect(DomainReportBody.parse({ domain: 'bad.example.com', file_type: 'x' })).toEqual({ domain: 'bad.example.com', confidence: 1 });
    expect(DomainReportBody.parse({ domain: 'bad.example.com', confidence: 0.3, tags: tags(10) })).toEqual({
      domain: 'bad.example.com',
      confidence: 0.3,
      tags: tags(10),
    });
    expect(ok(DomainReportBody, { domain: 'bad.example.com', tags: tags(11) })).toBe(false);
    expect(ok(DomainReportBody, { domain: 'bad.example.com', tags: [] })).toBe(false);
    expect(ok(DomainReportBody, { domain: 'bad.example.com', tags: ['a', 'a'] })).toBe(false);
    expect(ok(DomainReportBody, { domain: 'bad.example.com', confidence: 1.01 })).toBe(false);
    expect(ok(DomainReportBody, { confidence: 1 })).toBe(false);
    expect(ok(DomainReportBody, { domain: 'bad.example.com', tags: ['a,b'] })).toBe(false);
  });
});

describe('URL endpoints', () => {
  it('path takes an http, https or ftp URL', () => {
    for (const url of ['https://bad.example.com/login?x=1', 'http://203.0.113.7:8080/a', 'ftp://files.example.org/x.exe']) {
      expect(UrlParams.parse({ url })).toEqual({ url });
    }
    for (const url of ['bad.example.com/login', 'javascript:alert(1)', 'mailto:a@example.com', 'file:///etc/passwd', `https://a.example/${'x'.repeat(2048)}`]) {
      expect(ok(UrlParams, { url })).toBe(false);
    }
  });

  it('score list, feed and look-up queries', () => {
    expect(ok(UrlsScoreParams, { min_score: '1000' })).toBe(false);
    expect(UrlsScoreParams.parse({ min_score: '999' })).toEqual({ min_score: 999 });
    expect(UrlsScoreQuery.parse({})).toEqual({ format: 'CSV' });
    expect(UrlsFeedQuery.parse({ ts: '0' })).toEqual({ ts: 0, page_size: 101 });
    expect(UrlLookupQuery.parse({ explain: 'yes' })).toEqual({ explain: 'yes' });
  });

  it('report: confidence default 1, tags unique 1..10', () => {
    expect(UrlReportBody.parse({ url: 'https://bad.example.com/x', tags: ['phishing'] })).toEqual({
      url: 'https://bad.example.com/x',
      confidence: 1,
      tags: ['phishing'],
    });
    expect(ok(UrlReportBody, { url: 'https://bad.example.com/x', tags: tags(11) })).toBe(false);
    expect(ok(UrlReportBody, { url: 'https://bad.example.com/x', tags: ['a', 'a'] })).toBe(false);
    expect(ok(UrlReportBody, { url: 'https://bad.example.com/x', confidence: -0.01 })).toBe(false);
    expect(ok(UrlReportBody, { url: 'not a url' })).toBe(false);
  });
});
