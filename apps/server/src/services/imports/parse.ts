import { ApiError, type ImportFormat } from '@rampart/contracts';
import { parseStixPattern } from '../stix/stix-pattern.ts';

export type ImportKind = 'ipv4' | 'domain' | 'url' | 'file';
export type RefusalCode = 'malformed' | 'unsupported_type' | 'not_for_detection';

/** One row of an import file, before the rules of its kind are applied. */
export interface Candidate {
  row: number;
  kind: ImportKind | null;
  value: string;
  confidence: number | null;
  /** The row's own source (CSV), else the import's. */
  source: string | null;
  refusal?: { code: RefusalCode; message: string };
}

const KINDS: readonly string[] = ['ipv4', 'domain', 'url', 'file'];
export const CSV_HEADER = 'value,kind,confidence,source';

function contentError(message: string): ApiError {
  return new ApiError('validation_failed', `body.content: ${message}`, { errors: [{ path: 'body.content', message }] });
}

/** The fields of one CSV line (RFC 4180 quoting: "a,b" and "" inside quotes). */
function csvFields(line: string): string[] | null {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (i >= line.length) return null;
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += line[i++];
      }
      if (i < line.length && line[i] !== ',') return null;
    } else {
      const end = line.indexOf(',', i);
      field = line.slice(i, end === -1 ? line.length : end);
      i = end === -1 ? line.length : end;
    }
    fields.push(field.trim());
    if (i >= line.length) return fields;
    i++;
  }
}

function parseCsv(content: string): Candidate[] {
  const lines = content.split(/\r?\n/);
  const header = (lines.shift() ?? '').replace(/^\uFEFF/, '').trim().toLowerCase().replace(/\s+/g, '');
  if (header !== CSV_HEADER) throw contentError(`a CSV import starts with the header ${CSV_HEADER}`);
  const out: Candidate[] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    const row = out.length + 1;
    const fields = csvFields(line);
    if (!fields || fields.length !== 4) {
      out.push({ row, kind: null, value: line, confidence: null, source: null, refusal: { code: 'malformed', message: 'a row has 4 fields: value,kind,confidence,source' } });
      continue;
    }
    const [value, kind, conf, source] = fields as [string, string, string, string];
    const confidence = conf === '' ? 1 : Number(conf);
    const c: Candidate = { row, kind: KINDS.includes(kind) ? (kind as ImportKind) : null, value, confidence: Number.isFinite(confidence) ? confidence : null, source: source === '' ? null : source };
    if (c.kind === null) c.refusal = { code: 'unsupported_type', message: `kind ${kind} is not one of ${KINDS.join(', ')}` };
    else if (c.confidence === null || c.confidence < 0 || c.confidence > 1) c.refusal = { code: 'malformed', message: `confidence ${conf} is not a number from 0 to 1` };
    else if (c.source !== null && c.source.length > 256) c.refusal = { code: 'malformed', message: 'source is longer than 256 characters' };
    out.push(c);
  }
  return out;
}

function parseJson(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch (err) {
    throw contentError(`not JSON: ${(err as Error).message}`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** STIX 2.1: the bundle's indicator objects with a `stix` pattern; confidence 0-100 read as 0-1 (absent: 1). */
function parseStix(content: string): Candidate[] {
  const bundle = parseJson(content);
  if (!isObject(bundle) || bundle.type !== 'bundle' || !Array.isArray(bundle.objects)) throw contentError('a STIX 2.1 import is a bundle with objects');
  const out: Candidate[] = [];
  for (const object of bundle.objects) {
    if (!isObject(object) || object.type !== 'indicator') continue;
    const row = out.length + 1;
    const pattern = typeof object.pattern === 'string' ? object.pattern : '';
    const confidence = typeof object.confidence === 'number' && object.confidence >= 0 && object.confidence <= 100 ? object.confidence / 100 : 1;
    if (object.pattern_type !== undefined && object.pattern_type !== 'stix') {
      out.push({ row, kind: null, value: pattern, confidence, source: null, refusal: { code: 'unsupported_type', message: `pattern_type ${JSON.stringify(object.pattern_type)} is not stix` } });
      continue;
    }
    const subject = parseStixPattern(pattern);
    if ('problem' in subject) out.push({ row, kind: null, value: pattern, confidence, source: null, refusal: { code: subject.problem, message: subject.message } });
    else out.push({ row, kind: subject.kind, value: subject.value, confidence, source: null });
  }
  return out;
}

const MISP_KINDS: Record<string, ImportKind> = { 'ip-src': 'ipv4', 'ip-dst': 'ipv4', domain: 'domain', hostname: 'domain', url: 'url', md5: 'file', sha1: 'file', sha256: 'file' };

/** MISP: the event's attributes (`{Event: {Attribute: [...]}}` or the event itself); only `to_ids` ones are indicators, confidence 1. */
function parseMisp(content: string): Candidate[] {
  const doc = parseJson(content);
  const event = isObject(doc) && isObject(doc.Event) ? doc.Event : doc;
  if (!isObject(event) || !Array.isArray(event.Attribute)) throw contentError('a MISP import is an event with an Attribute array');
  return event.Attribute.map((attribute, i): Candidate => {
    const row = i + 1;
    if (!isObject(attribute) || typeof attribute.type !== 'string' || typeof attribute.value !== 'string') {
      return { row, kind: null, value: JSON.stringify(attribute) ?? '', confidence: null, source: null, refusal: { code: 'malformed', message: 'an attribute has a string type and value' } };
    }
    const kind = MISP_KINDS[attribute.type] ?? null;
    const c: Candidate = { row, kind, value: attribute.value, confidence: 1, source: null };
    if (kind === null) c.refusal = { code: 'unsupported_type', message: `MISP type ${attribute.type} is not imported` };
    // MISP's own flag: false marks context (not meant for detection), so it is not reported.
    else if (attribute.to_ids !== true && attribute.to_ids !== '1' && attribute.to_ids !== 1) c.refusal = { code: 'not_for_detection', message: 'to_ids is false' };
    return c;
  });
}

/** The rows of an import file; a file that is not of its format at all is 400 naming body.content. */
export function parseImport(format: ImportFormat, content: string): Candidate[] {
  if (format === 'csv') return parseCsv(content);
  if (format === 'stix21') return parseStix(content);
  return parseMisp(content);
}
