import { createHash } from 'node:crypto';
import { ApiError, canonicalDigest, parseIpv4, type ImportBody, type ImportResponse, type ImportRow } from '@rampart/contracts';
import type { AppConfig } from '../../config.ts';
import type { AuditActor, Store } from '../../store/index.ts';
import type { EventBus } from '../events.ts';
import type { Ipv4Reports } from '../ipv4/reports.ts';
import type { Rollups } from '../operators/rollups.ts';
import { audit } from '../operators/audit.ts';
import { assertReportable, canonicalNetwork } from '../ipv4/reports.ts';
import { normalizeDomain, normalizeUrl } from '../named/indicator-names.ts';
import { reportNamed } from '../named/named-indicators.ts';
import { reportFile } from '../named/files.ts';
import { parseImport, type Candidate, type ImportKind } from './parse.ts';

/*
 * Bulk import (issue 37 item 5): a CSV, STIX 2.1 bundle or MISP event read row by row; each row
 * goes through the rules and the report service of its kind (POST /ips, /domains, /urls, /files),
 * so a refused row never loses the others. A row reported once is keyed by (organization, kind,
 * canonical value, content hash): the same content imported again reports nothing twice.
 */

/** Rows reported per batch (one batch's reports run concurrently through the report services). */
const BATCH = 50;
/** Files are reported without a sample: their type is unknown. */
const IMPORTED_FILE_TYPE = 'application/octet-stream';

/** What an import reports through: the API's context, or the CLI's own (cli/import-command.ts). */
export interface ImportDeps {
  config: Pick<AppConfig, 'allowNonPublicReports' | 'maxReportPrefix'>;
  store: Store;
  events: EventBus;
  ipv4Reports: Pick<Ipv4Reports, 'reportForOrg'>;
  rollups?: Pick<Rollups, 'countReports'>;
}

type Checked = ImportRow & { source: string };

function refused(c: Candidate, code: NonNullable<ImportRow['reason']>['code'], message: string, source: string): Checked {
  return { row: c.row, kind: c.kind, value: c.value, canonical: null, confidence: c.confidence, status: 'refused', reason: { code, message }, source };
}

/** The canonical value of a row of a known kind, or the error the kind's POST would answer. */
function canonical(kind: ImportKind, value: string, config: ImportDeps['config']): string {
  if (kind === 'ipv4') {
    if (!parseIpv4(value)) throw new ApiError('validation_failed', `${value} is not an IPv4 address or network`);
    assertReportable(value, config, 'value');
    const { network } = canonicalNetwork(value);
    return network.endsWith('/32') ? network.slice(0, -3) : network;
  }
  if (kind === 'domain') return normalizeDomain(value, 'value');
  if (kind === 'url') return normalizeUrl(value, 'value');
  const digest = canonicalDigest(value);
  if (!digest) throw new ApiError('validation_failed', `${value} is not an MD5, SHA-1 or SHA-256 digest`);
  return digest;
}

const REFUSAL_CODES = new Set(['non_public_address', 'network_too_wide', 'reserved_ip']);

function check(c: Candidate, defaultSource: string, config: ImportDeps['config']): Checked {
  const source = c.source ?? defaultSource;
  if (c.refusal) return refused(c, c.refusal.code, c.refusal.message, source);
  try {
    const value = canonical(c.kind!, c.value, config);
    return { row: c.row, kind: c.kind, value: c.value, canonical: value, confidence: c.confidence, status: 'accepted', source };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const code = REFUSAL_CODES.has(err.code) ? (err.code as 'non_public_address') : 'malformed';
    return refused(c, code, err.message.replace(/^value: /, ''), source);
  }
}

async function reportRow(context: ImportDeps, orgId: number, row: Checked): Promise<void> {
  const confidence = row.confidence!;
  if (row.kind === 'ipv4') {
    // The rules and the group-commit batcher of POST /ips (which counts the report itself).
    await context.ipv4Reports.reportForOrg(orgId, { ip: row.canonical!, confidence, source: row.source });
    return;
  }
  if (row.kind === 'file') {
    const digest = row.canonical!;
    const field = digest.length === 32 ? 'md5' : digest.length === 40 ? 'sha1' : 'sha256';
    await reportFile(context.store, context.events, orgId, { confidence, file_type: IMPORTED_FILE_TYPE, [field]: digest });
  } else {
    await reportNamed(context.store, context.events, row.kind!, orgId, row.canonical!, { confidence });
  }
  context.rollups?.countReports(orgId);
}

/** Imports (or previews, `dry_run`) a file as reports of the caller's organization; audited as `import` unless a dry run. */
export async function runImport(context: ImportDeps, orgId: number, actor: AuditActor, body: ImportBody): Promise<ImportResponse> {
  const contentSha256 = createHash('sha256').update(body.content).digest('hex');
  const defaultSource = body.source ?? `import:${body.format}`;
  const rows = parseImport(body.format, body.content).map((c) => check(c, defaultSource, context.config));
  if (!body.dry_run) {
    const accepted = rows.filter((r) => r.status === 'accepted');
    for (let i = 0; i < accepted.length; i += BATCH) {
      await Promise.all(
        accepted.slice(i, i + BATCH).map(async (row) => {
          const key = createHash('sha256').update(`${row.kind}\n${row.canonical}\n${contentSha256}`).digest('hex');
          if (!(await context.store.importKeys.claim(orgId, key))) {
            row.status = 'duplicate';
            return;
          }
          try {
            await reportRow(context, orgId, row);
            row.status = 'imported';
          } catch (err) {
            await context.store.importKeys.release(orgId, key);
            if (!(err instanceof ApiError) || err.status >= 500) throw err;
            Object.assign(row, { status: 'refused', canonical: null, reason: { code: err.code === 'reserved_ip' ? 'reserved_ip' : 'malformed', message: err.message } });
          }
        }),
      );
    }
  }
  const count = (s: ImportRow['status']) => rows.filter((r) => r.status === s).length;
  const counts = { rows: rows.length, accepted: count('accepted'), imported: count('imported'), duplicate: count('duplicate'), refused: count('refused') };
  if (!body.dry_run) {
    await audit(context.store, actor, { orgId, action: 'import', target: `import:${contentSha256}`, detail: { format: body.format, source: defaultSource, ...counts } });
  }
  return { dry_run: body.dry_run, format: body.format, content_sha256: contentSha256, counts, rows: rows.map(({ source: _s, ...row }) => row) };
}
