import { z } from 'zod';
import { VERSION_INSTANCE_KEY } from './constants.ts';
import { DomainName, Ipv4Address, Ipv4OrNetwork } from './primitives.ts';

export const VersionRecord = z
  .object({
    version: z.string().describe('Build date of the running service'),
    is_master: z.string(),
    application: z.string(),
    [VERSION_INSTANCE_KEY]: z.string().describe('Deployment kind'),
    hostname: z.string(),
    m: z.int(),
    e: z.string(),
  })
  .meta({ description: 'Health and version of the running service (spec 2.9)' });
export type VersionRecord = z.infer<typeof VersionRecord>;

export const FileTypeRecord = z
  .object({
    name: z.string().describe('MIME type'),
    description: z.string().describe('May contain HTML line breaks'),
    types: z.array(z.string()).describe('File extensions'),
    alternatives: z.array(z.string()),
    furtherReading: z.array(z.object({ title: z.string(), url: z.string() })),
  })
  .meta({ description: 'A file type accepted in file reports (spec 2.6)' });
export type FileTypeRecord = z.infer<typeof FileTypeRecord>;

export const FileTypeList = z.array(FileTypeRecord);
export type FileTypeList = z.infer<typeof FileTypeList>;

export const CdnRecord = z
  .object({
    name: z.string(),
    addresses: z.array(z.union([Ipv4OrNetwork, z.ipv6(), z.cidrv6()])).describe('Single addresses or CIDR networks'),
  })
  .meta({ description: 'Address ranges of a well-known CDN (spec 2.7)' });
export type CdnRecord = z.infer<typeof CdnRecord>;

export const CdnList = z.array(CdnRecord);
export type CdnList = z.infer<typeof CdnList>;

export const IpMetadata = z
  .object({
    status: z.string().describe('success, or fail for private, reserved or unknown addresses'),
    message: z.string().optional().describe('Why status is fail: private range, reserved range'),
    continent: z.string(),
    continentCode: z.string(),
    country: z.string(),
    countryCode: z.string(),
    region: z.string(),
    regionName: z.string(),
    city: z.string(),
    district: z.string(),
    zip: z.string(),
    lat: z.number(),
    lon: z.number(),
    timezone: z.string(),
    offset: z.int().describe('UTC offset in seconds'),
    currency: z.string(),
    isp: z.string(),
    org: z.string(),
    as: z.string(),
    asname: z.string(),
    reverse: z.string(),
    mobile: z.boolean(),
    proxy: z.boolean(),
    hosting: z.boolean(),
    query: Ipv4Address.describe('The address queried'),
  })
  .meta({ description: 'Geolocation and network metadata of an IPv4 address (spec 2.8)' });
export type IpMetadata = z.infer<typeof IpMetadata>;

export const DomainResolution = z
  .array(z.union([z.ipv4(), z.ipv6()]))
  .meta({ description: 'Addresses the domain resolves to' });
export type DomainResolution = z.infer<typeof DomainResolution>;

/** Only the envelope of a STIX 2.0 bundle is fixed; objects follow the STIX standard. */
export const Stix2Bundle = z
  .looseObject({
    type: z.literal('bundle'),
    id: z.string().startsWith('bundle--'),
    spec_version: z.string().optional(),
    objects: z.array(z.looseObject({ type: z.string(), id: z.string() })),
  })
  .meta({ description: 'A STIX 2.0 bundle, or a STIX 2.1 bundle with ?spec_version=2.1' });
export type Stix2Bundle = z.infer<typeof Stix2Bundle>;

export const InfoIpParams = z.object({ ipv4: Ipv4Address });
export type InfoIpParams = z.infer<typeof InfoIpParams>;

export const InfoDomainParams = z.object({ domain_name: DomainName });
export type InfoDomainParams = z.infer<typeof InfoDomainParams>;

export const Stix2Params = z.object({
  stix2id: z.string().min(1).max(2048).describe('Indicator to describe: an IPv4 address, a domain, a URL (URL-encoded) or an MD5, SHA1 or SHA256 digest'),
});
export type Stix2Params = z.infer<typeof Stix2Params>;

export const Stix2Query = z.object({
  spec_version: z.enum(['2.0', '2.1']).default('2.0').describe('STIX version of the bundle: 2.0 (default, kept for compatibility) or 2.1'),
});
export type Stix2Query = z.infer<typeof Stix2Query>;
