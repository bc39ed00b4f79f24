import { describe, expect, it } from 'vitest';
import { DigestParams, FileDecisionBody, FileLookupQuery, FileReportBody, FilesFeedQuery, FilesScoreParams, FilesScoreQuery } from './index.ts';

const ok = (schema: { safeParse(v: unknown): { success: boolean } }, value: unknown) => schema.safeParse(value).success;

const MD5 = '44d88612fea8a8f36de82e1278abb02f';
const SHA1 = '3395856CE81F2B7382DEE72602F798B642F14140';
const SHA256 = '275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f';

describe('/files/{digest}', () => {
  it('takes an MD5, SHA1 or SHA256 in any case', () => {
    for (const digest of [MD5, SHA1, SHA256, MD5.toUpperCase()]) expect(DigestParams.parse({ digest })).toEqual({ digest });
    expect(ok(DigestParams, { digest: MD5.slice(1) })).toBe(false);
    expect(ok(DigestParams, { digest: `${SHA1}0` })).toBe(false);
    expect(ok(DigestParams, { digest: 'z'.repeat(32) })).toBe(false);
  });

  it('look-up query defaults', () => {
    expect(FileLookupQuery.parse({})).toEqual({ deep_scan: 'NO', explain: 'no' });
    expect(FileLookupQuery.parse({ deep_scan: 'YES' })).toEqual({ deep_scan: 'YES', explain: 'no' });
    expect(ok(FileLookupQuery, { deep_scan: 'yes' })).toBe(false);
  });

  it('PUT decision is "0", "1" or "-1", numbers accepted too', () => {
    expect(FileDecisionBody.parse({ decision: '1' })).toEqual({ decision: 1 });
    expect(FileDecisionBody.parse({ decision: '-1' })).toEqual({ decision: -1 });
    expect(FileDecisionBody.parse({ decision: 0 })).toEqual({ decision: 0 });
    expect(ok(FileDecisionBody, {})).toBe(false);
    expect(ok(FileDecisionBody, { decision: '2' })).toBe(false);
    expect(ok(FileDecisionBody, { decision: '-2' })).toBe(false);
    expect(ok(FileDecisionBody, { decision: null })).toBe(false);
    expect(ok(FileDecisionBody, { decision: false })).toBe(false);
  });
});

describe('GET /files/score/{min_score}', () => {
  it('bounds 1 and 1000 are exclusive', () => {
    expect(ok(FilesScoreParams, { min_score: '1' })).toBe(false);
    expect(ok(FilesScoreParams, { min_score: '1000' })).toBe(false);
    expect(FilesScoreParams.parse({ min_score: '2' })).toEqual({ min_score: 2 });
    expect(FilesScoreParams.parse({ min_score: '999' })).toEqual({ min_score: 999 });
  });

  it('digest is required; format defaults to CSV', () => {
    expect(ok(FilesScoreQuery, {})).toBe(false);
    expect(FilesScoreQuery.parse({ digest: 'SHA256' })).toEqual({ digest: 'SHA256', format: 'CSV' });
    expect(FilesScoreQuery.parse({ digest: 'MD5', format: 'LIST', page: 'abc' })).toEqual({ digest: 'MD5', format: 'LIST', page: 'abc' });
    expect(ok(FilesScoreQuery, { digest: 'sha256' })).toBe(false);
  });
});

describe('GET /files', () => {
  it('ts is required; defaults page_size 101 and min_score 1', () => {
    expect(ok(FilesFeedQuery, {})).toBe(false);
    expect(FilesFeedQuery.parse({ ts: '0' })).toEqual({ ts: 0, page_size: 101, min_score: 1 });
  });

  it('page_size bounds 100 and 2000 are exclusive', () => {
    expect(ok(FilesFeedQuery, { ts: '0', page_size: '100' })).toBe(false);
    expect(ok(FilesFeedQuery, { ts: '0', page_size: '2000' })).toBe(false);
    expect(FilesFeedQuery.parse({ ts: '0', page_size: '101' }).page_size).toBe(101);
    expect(FilesFeedQuery.parse({ ts: '0', page_size: '1999' }).page_size).toBe(1999);
  });

  it('min_score bounds 0 and 1000 are exclusive', () => {
    expect(ok(FilesFeedQuery, { ts: '0', min_score: '0' })).toBe(false);
    expect(ok(FilesFeedQuery, { ts: '0', min_score: '1000' })).toBe(false);
    expect(FilesFeedQuery.parse({ ts: '0', min_score: '1' }).min_score).toBe(1);
    expect(FilesFeedQuery.parse({ ts: '0', min_score: '999' }).min_score).toBe(999);
  });

  it('ts is greater than -1', () => {
    expect(ok(FilesFeedQuery, { ts: '-1' })).toBe(false);
    expect(ok(FilesFeedQuery, { ts: 'yesterday' })).toBe(false);
  });

  it('tags: comma-separated, unique, at most 100', () => {
    const parsed = FilesFeedQuery.parse({ ts: '5', tags: 'emotet, ransomware,,', file_type: 'application/pdf', file_name: 'a.pdf' });
    expect(parsed).toEqual({ ts: 5, page_size: 101, min_score: 1, tags: ['emotet', 'ransomware'], file_type: 'application/pdf', file_name: 'a.pdf' });
    expect(FilesFeedQuery.parse({ ts: '5', tags: '' }).tags).toEqual([]);
    const hundred = Array.from({ length: 100 }, (_, i) => `t${i}`);
    expect(FilesFeedQuery.parse({ ts: '5', tags: hundred.join(',') }).tags).toEqual(hundred);
    expect(ok(FilesFeedQuery, { ts: '5', tags: [...hundred, 't100'].join(',') })).toBe(false);
    expect(ok(FilesFeedQuery, { ts: '5', tags: 'a,b,a' })).toBe(false);
  });
});

describe('POST /files', () => {
  const report = { file_type: 'application/x-dosexec', md5: MD5 };

  it('applies confidence default 1 and strips unknown fields', () => {
    expect(FileReportBody.parse({ ...report, extra: true })).toEqual({ ...report, confidence: 1 });
  });

  it('accepts every field', () => {
    const full = {
      confidence: 0.5,
      file_type: 'application/pdf',
      tags: ['phishing'],
      file_bytes: 'JVBERi0xLjQK',
      file_name: 'invoice.pdf',
      md5: MD5,
      sha1: SHA1,
      sha256: SHA256,
    };
    expect(FileReportBody.parse(full)).toEqual(full);
  });

  it('requires file_type and at least one digest of the right length', () => {
    expect(ok(FileReportBody, { md5: MD5 })).toBe(false);
    expect(ok(FileReportBody, { file_type: 'application/pdf' })).toBe(false);
    expect(ok(FileReportBody, { file_type: 'application/pdf', md5: SHA1 })).toBe(false);
    expect(ok(FileReportBody, { file_type: 'application/pdf', sha256: SHA1 })).toBe(false);
    expect(ok(FileReportBody, { file_type: 'application/pdf', sha1: SHA1 })).toBe(true);
  });

  it('confidence is 0..1 and file_bytes is bounded base64', () => {
    expect(ok(FileReportBody, { ...report, confidence: -0.01 })).toBe(false);
    expect(ok(FileReportBody, { ...report, confidence: 1.01 })).toBe(false);
    expect(FileReportBody.parse({ ...report, confidence: '0.25' }).confidence).toBe(0.25);
    expect(ok(FileReportBody, { ...report, file_bytes: 'not base64!' })).toBe(false);
    expect(ok(FileReportBody, { ...report, file_bytes: 'A'.repeat(87_384) })).toBe(true);
    expect(ok(FileReportBody, { ...report, file_bytes: 'A'.repeat(87_388) })).toBe(false);
  });
});
