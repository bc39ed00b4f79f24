import { describe, expect, it } from 'vitest';
import {
  CdnRecord,
  DomainPage,
  DomainRecord,
  FilePage,
  FileRecord,
  FileTypeRecord,
  IpMetadata,
  Ipv4Page,
  Ipv4Record,
  MemberOf,
  UrlPage,
  UrlRecord,
  User,
  VersionRecord,
  VpnLicense,
} from './index.ts';
import {
  sampleCdn,
  sampleDomainPage,
  sampleFilePage,
  sampleFileRecord,
  sampleFileType,
  sampleIpMetadata,
  sampleIpv4Page,
  sampleIpv4Record,
  sampleMemberOf,
  sampleUrlPage,
  sampleUser,
  sampleVersion,
  sampleVpnLicense,
} from './fixtures.ts';

describe('records of spec section 2', () => {
  it.each([
    ['User', User, sampleUser],
    ['MemberOf', MemberOf, sampleMemberOf],
    ['Ipv4Record', Ipv4Record, sampleIpv4Record],
    ['Ipv4Page', Ipv4Page, sampleIpv4Page],
    ['FileRecord', FileRecord, sampleFileRecord],
    ['FilePage', FilePage, sampleFilePage],
    ['DomainPage', DomainPage, sampleDomainPage],
    ['UrlPage', UrlPage, sampleUrlPage],
    ['VersionRecord', VersionRecord, sampleVersion],
    ['FileTypeRecord', FileTypeRecord, sampleFileType],
    ['CdnRecord', CdnRecord, sampleCdn],
    ['IpMetadata', IpMetadata, sampleIpMetadata],
    ['VpnLicense', VpnLicense, sampleVpnLicense],
  ] as const)('%s parses its sample unchanged', (_name, schema, sample) => {
    expect(schema.parse(sample)).toEqual(sample);
  });

  it('an IPv4 record with full=no omits ip_info, info, elk_ts and elk_entry_ts', () => {
    const { ip_info: _a, info: _b, elk_ts: _c, elk_entry_ts: _d, ...short } = sampleIpv4Record;
    expect(Ipv4Record.parse(short)).toEqual(short);
  });

  it('an IPv4 record may be a network and carry a decision with a ttl', () => {
    const record = { ...sampleIpv4Record, ip: '198.51.100.0/24', is_network: true, decision: 1, ttl: 1800000000 };
    expect(Ipv4Record.parse(record)).toEqual(record);
  });

  it('an IPv4 record requires decision (-1|0|1) and ttl (int or null)', () => {
    const { decision: _d, ...noDecision } = sampleIpv4Record;
    expect(Ipv4Record.safeParse(noDecision).success).toBe(false);
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, decision: 2 }).success).toBe(false);
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, ttl: 1.5 }).success).toBe(false);
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, gid: 'GID-1' }).success).toBe(false);
  });

  it('elk timestamps are ISO 8601 UTC with milliseconds', () => {
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, elk_ts: '2024-05-31T16:08:37Z' }).success).toBe(false);
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, elk_ts: '2024-05-31T18:08:37.000+02:00' }).success).toBe(false);
  });

  it('the IPv4 header ts is a string holding an integer; feed headers carry integers', () => {
    const header = sampleIpv4Page.header;
    expect(Ipv4Page.safeParse({ ...sampleIpv4Page, header: { ...header, ts: 1717171000 } }).success).toBe(false);
    expect(Ipv4Page.safeParse({ ...sampleIpv4Page, header: { ...header, ts: '17.5' } }).success).toBe(false);
    expect(Ipv4Page.safeParse({ ...sampleIpv4Page, header: { ...header, version: 4 } }).success).toBe(false);
    expect(FilePage.safeParse({ ...sampleFilePage, header: { ...sampleFilePage.header, ts: '1717000000' } }).success).toBe(false);
    expect(FilePage.safeParse({ ...sampleFilePage, header: { ...sampleFilePage.header, type: 'Domain' } }).success).toBe(false);
  });

  it('feed page users carry coin fields; IPv4 page users need not', () => {
    const { credit_tokens: _c, ...memberOf } = sampleFilePage.header.user.member_of;
    const header = { ...sampleFilePage.header, user: { ...sampleFilePage.header.user, member_of: memberOf } };
    expect(FilePage.safeParse({ ...sampleFilePage, header }).success).toBe(false);
    expect(Ipv4Page.safeParse(sampleIpv4Page).success).toBe(true);
  });

  it('file records use uppercase hex and base64 or null file_bytes', () => {
    expect(FileRecord.safeParse({ ...sampleFileRecord, md5: sampleFileRecord.md5.toLowerCase() }).success).toBe(false);
    expect(FileRecord.parse({ ...sampleFileRecord, file_bytes: 'TVqQAAMAAAAEAAAA' }).file_bytes).toBe('TVqQAAMAAAAEAAAA');
    expect(FileRecord.safeParse({ ...sampleFileRecord, file_bytes: 'not base64!' }).success).toBe(false);
  });

  it('domain and URL records validate the indicator', () => {
    expect(DomainRecord.safeParse({ ...sampleDomainPage.body[0], domain: 'not a domain' }).success).toBe(false);
    expect(UrlRecord.safeParse({ ...sampleUrlPage.body[0], url: 'javascript:alert(1)' }).success).toBe(false);
  });

  it('scores are integers 0..1000 (0: an organization\'s decision record on a value nobody reported)', () => {
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, score: 0 }).success).toBe(true);
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, score: -1 }).success).toBe(false);
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, score: 1.5 }).success).toBe(false);
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, score: 1001 }).success).toBe(false);
    expect(Ipv4Record.safeParse({ ...sampleIpv4Record, score: 1000 }).success).toBe(true);
    // Files, domains and URLs too (migration 0018).
    for (const [schema, record] of [[FileRecord, sampleFileRecord], [DomainRecord, sampleDomainPage.body[0]], [UrlRecord, sampleUrlPage.body[0]]] as const) {
      expect((schema as typeof DomainRecord).safeParse({ ...record, score: 0 }).success).toBe(true);
      expect((schema as typeof DomainRecord).safeParse({ ...record, score: -1 }).success).toBe(false);
      expect((schema as typeof DomainRecord).safeParse({ ...record, score: 1.5 }).success).toBe(false);
    }
  });

  it('the version record names its instance field after the service', () => {
    const { RMP_instance: _i, ...rest } = sampleVersion;
    expect(VersionRecord.safeParse(rest).success).toBe(false);
  });

  it('VPN license ids carry the license prefix', () => {
    expect(VpnLicense.safeParse({ ...sampleVpnLicense, vid: 'RMP-VID-9A1B' }).success).toBe(false);
  });
});
