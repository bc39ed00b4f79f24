import { z } from 'zod';

// TAXII 2.1 (OASIS, https://docs.oasis-open.org/cti/taxii/v2.1/) as Rampart serves it at /taxii2/:
// the query parameters it accepts and the resources it answers with. Objects themselves are STIX
// 2.1 and follow the OASIS schemas, so only their envelope is fixed here.

export const TAXII_BASE = '/taxii2';
export const TAXII_MEDIA_TYPE = 'application/taxii+json;version=2.1';
export const STIX_MEDIA_TYPE = 'application/stix+json;version=2.1';
/** Largest `limit` a page holds (a smaller one is honoured, a larger one lowered to it). */
export const TAXII_MAX_LIMIT = 1000;
/** Most ids, types or versions one `match[...]` filter may list. */
export const TAXII_MAX_MATCH = 100;

/** A TAXII timestamp: RFC 3339 in UTC with a `Z` (seconds and a fraction optional). */
export const TaxiiTimestamp = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/, 'an RFC 3339 UTC timestamp such as 2026-01-01T00:00:00.000Z');

const list = (item: z.ZodType<string, string>) =>
  z
    .string()
    .max(8192)
    .transform((s) => s.split(',').map((x) => x.trim()))
    .pipe(z.array(item).min(1).max(TAXII_MAX_MATCH));

const StixId = z.string().regex(/^[a-z0-9-]+--[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'a STIX identifier');
const VersionSelector = z.union([z.enum(['first', 'last', 'all']), TaxiiTimestamp]);

/** `GET …/objects/` and `…/manifest/`: filtering and paging (TAXII 2.1 sections 3.4, 3.5). */
export const TaxiiObjectsQuery = z.object({
  added_after: TaxiiTimestamp.optional(),
  limit: z.coerce.number().int().min(1).optional(),
  next: z.string().min(1).max(1024).optional(),
  'match[id]': list(StixId).optional(),
  'match[type]': list(z.string().regex(/^[a-z0-9-]{1,250}$/, 'a STIX type')).optional(),
  'match[version]': list(VersionSelector).optional(),
  'match[spec_version]': list(z.string().regex(/^\d\.\d$/, 'a STIX version such as 2.1')).optional(),
});
export type TaxiiObjectsQuery = z.infer<typeof TaxiiObjectsQuery>;

/** `GET …/objects/{object-id}/`: the same, less `match[id]` and `match[type]`. */
export const TaxiiObjectQuery = TaxiiObjectsQuery.omit({ 'match[id]': true, 'match[type]': true });
export type TaxiiObjectQuery = z.infer<typeof TaxiiObjectQuery>;

/** `GET …/objects/{object-id}/versions/`. */
export const TaxiiVersionsQuery = TaxiiObjectsQuery.pick({ added_after: true, limit: true, next: true, 'match[spec_version]': true });
export type TaxiiVersionsQuery = z.infer<typeof TaxiiVersionsQuery>;

export const TaxiiCollectionParams = z.object({ api_root: z.string().max(64), collection_id: z.string().max(64) });
export const TaxiiObjectParams = TaxiiCollectionParams.extend({ object_id: z.string().max(300) });

export const TaxiiDiscovery = z.object({
  title: z.string(),
  description: z.string().optional(),
  contact: z.string().optional(),
  default: z.string().optional(),
  api_roots: z.array(z.string()),
});
export type TaxiiDiscovery = z.infer<typeof TaxiiDiscovery>;

export const TaxiiApiRoot = z.object({
  title: z.string(),
  description: z.string().optional(),
  versions: z.array(z.string()),
  max_content_length: z.int(),
});
export type TaxiiApiRoot = z.infer<typeof TaxiiApiRoot>;

export const TaxiiCollection = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string().optional(),
  alias: z.string().optional(),
  can_read: z.boolean(),
  can_write: z.boolean(),
  media_types: z.array(z.string()),
});
export type TaxiiCollection = z.infer<typeof TaxiiCollection>;

export const TaxiiCollections = z.object({ collections: z.array(TaxiiCollection).optional() });
export type TaxiiCollections = z.infer<typeof TaxiiCollections>;

const StixObject = z.looseObject({ type: z.string(), id: z.string(), spec_version: z.string().optional() });

export const TaxiiEnvelope = z.object({ more: z.boolean(), next: z.string().optional(), objects: z.array(StixObject).optional() });
export type TaxiiEnvelope = z.infer<typeof TaxiiEnvelope>;

export const TaxiiManifestRecord = z.object({ id: z.string(), date_added: z.string(), version: z.string(), media_type: z.string() });
export const TaxiiManifest = z.object({ more: z.boolean(), next: z.string().optional(), objects: z.array(TaxiiManifestRecord).optional() });
export type TaxiiManifest = z.infer<typeof TaxiiManifest>;

export const TaxiiVersions = z.object({ more: z.boolean(), next: z.string().optional(), versions: z.array(z.string()).optional() });
export type TaxiiVersions = z.infer<typeof TaxiiVersions>;

export const TaxiiError = z.object({
  title: z.string(),
  description: z.string().optional(),
  error_id: z.string().optional(),
  error_code: z.string().optional(),
  http_status: z.string().optional(),
  external_details: z.string().optional(),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type TaxiiError = z.infer<typeof TaxiiError>;
