import { isNumeric, schemaTypes, type ApiOperation, type JsonSchema } from './openapi-operations.ts';
import { numberInside } from './api-examples.ts';
import { baselineRequest, encodeSegment, type Baseline } from './malformed-input.ts';
import type { ProbeRequest } from './response-checks.ts';

/**
 * Requests that break (or just respect) one constraint the OpenAPI document declares, with the
 * field a 400 must name. `reject`: must be 400 naming `field`; `accept`: must not be a 400 naming
 * it; `survive`: text no database column can hold, or a number no database type can: any 4xx
 * (a 400 naming `field`) or a success, never a 5xx.
 */
export type Expectation = 'reject' | 'accept' | 'survive';
export interface ConstraintCase {
  label: string;
  request: ProbeRequest;
  field: string;
  expect: Expectation;
}

/** Valid JSON text that PostgreSQL's text and jsonb cannot store: NUL, and a lone surrogate escape. */
const UNSTORABLE_TEXT = ['a\u0000b', '\ud800x'];
/** Numbers inside every declared range that PostgreSQL's double precision cannot parse (denormals). */
const UNSTORABLE_NUMBERS = ['1e-320', '4.9e-324'];

type Edit = { where: 'path'; name: string; value: string } | { where: 'query'; name: string; value: string } | { where: 'body'; at: string[]; value: unknown; remove?: boolean };

function apply(op: ApiOperation, base: Baseline, edit: Edit): ProbeRequest {
  if (edit.where === 'path') return baselineRequest(op, { ...base, path: { ...base.path, [edit.name]: encodeSegment(edit.value) } });
  if (edit.where === 'query') {
    const query = [...base.query.filter(([k]) => k !== edit.name), [edit.name, encodeSegment(edit.value)] as [string, string]];
    return baselineRequest(op, { ...base, query });
  }
  const body = structuredClone(base.body) as Record<string, unknown>;
  let node = body;
  for (const seg of edit.at.slice(0, -1)) node = node[seg] as Record<string, unknown>;
  const last = edit.at[edit.at.length - 1]!;
  if (edit.remove) delete node[last];
  else node[last] = edit.value;
  return baselineRequest(op, { ...base, body });
}

/** Numbers on each declared bound, with what the bound says about them ("Bounds" in decisions.md). */
function numberCases(s: JsonSchema, inside: number): Array<{ n: number; expect: Expectation; why: string }> {
  const out: Array<{ n: number; expect: Expectation; why: string }> = [];
  const integer = schemaTypes(s).includes('integer');
  if (s.exclusiveMinimum !== undefined) out.push({ n: s.exclusiveMinimum, expect: 'reject', why: 'exclusive minimum' }, { n: s.exclusiveMinimum + 1, expect: 'accept', why: 'exclusive minimum + 1' });
  if (s.exclusiveMaximum !== undefined) out.push({ n: s.exclusiveMaximum, expect: 'reject', why: 'exclusive maximum' }, { n: s.exclusiveMaximum - 1, expect: 'accept', why: 'exclusive maximum - 1' });
  if (s.minimum !== undefined) out.push({ n: s.minimum - 1, expect: 'reject', why: 'minimum - 1' }, { n: s.minimum, expect: 'accept', why: 'minimum' });
  if (s.maximum !== undefined) out.push({ n: s.maximum + 1, expect: 'reject', why: 'maximum + 1' }, { n: s.maximum, expect: 'accept', why: 'maximum' });
  if (integer) out.push({ n: inside + 0.5, expect: 'reject', why: 'fraction for an integer' });
  else if ([s.minimum, s.maximum, s.exclusiveMinimum, s.exclusiveMaximum].some((b) => b !== undefined)) {
    // Only where bounds are declared: a preprocessed number (numeric strings allowed) loses its bounds in the document.
    out.push({ n: inside + 0.5, expect: 'accept', why: 'a fraction inside the bounds' });
    if (s.exclusiveMinimum !== undefined) out.push({ n: s.exclusiveMinimum + 0.5, expect: 'accept', why: 'exclusive minimum + 0.5' });
  }
  return out;
}

function paramCases(op: ApiOperation, base: Baseline): ConstraintCase[] {
  const out: ConstraintCase[] = [];
  for (const p of op.params) {
    const where = p.in;
    const field = `${where === 'path' ? 'params' : 'querystring'}.${p.name}`;
    const s = p.schema;
    const edit = (value: string) => apply(op, base, where === 'path' ? { where, name: p.name, value } : { where, name: p.name, value });
    if (isNumeric(s)) {
      const given = where === 'path' ? base.path[p.name] : base.query.find(([k]) => k === p.name)?.[1];
      const inside = given === undefined ? numberInside(s) : Number(decodeURIComponent(given));
      for (const c of numberCases(s, inside)) out.push({ label: `${p.name}=${c.n} (${c.why})`, request: edit(String(c.n)), field, expect: c.expect });
      out.push({ label: `${p.name}=abc`, request: edit('abc'), field, expect: 'reject' });
      for (const n of UNSTORABLE_NUMBERS) out.push({ label: `${p.name}=${n}`, request: edit(n), field, expect: 'survive' });
    }
    // A lone surrogate cannot be percent-encoded as UTF-8, so only NUL goes into a URL.
    if (schemaTypes(s).includes('string')) {
      for (const t of UNSTORABLE_TEXT.slice(0, 1)) out.push({ label: `${p.name} holding ${JSON.stringify(t)}`, request: edit(t), field, expect: 'survive' });
    }
    if (s.enum) out.push({ label: `${p.name} outside its enum`, request: edit('not-in-enum'), field, expect: 'reject' });
    if (s.maxLength !== undefined) out.push({ label: `${p.name} of maxLength + 1`, request: edit('a'.repeat(s.maxLength + 1)), field, expect: 'reject' });
    if ((s.minLength ?? 0) > 0 && where === 'query') out.push({ label: `${p.name} empty`, request: edit(''), field, expect: 'reject' });
    if (s.pattern || s.format || s.allOf) out.push({ label: `${p.name} malformed`, request: edit('not valid!'), field, expect: 'reject' });
  }
  return out;
}

function bodyCases(op: ApiOperation, base: Baseline, schema: JsonSchema, value: unknown, at: string[]): ConstraintCase[] {
  const out: ConstraintCase[] = [];
  const field = ['body', ...at].join('.');
  const edit = (v: unknown, label: string, expect: Expectation = 'reject') => out.push({ label: `${field} ${label}`, request: apply(op, base, { where: 'body', at, value: v }), field, expect });
  const types = schemaTypes(schema);
  if (at.length > 0 && !schema.anyOf && types.length === 1) {
    if (types[0] === 'string') {
      edit({}, 'as an object');
      if (schema.maxLength !== undefined) edit('a'.repeat(schema.maxLength + 1), 'of maxLength + 1');
      if ((schema.minLength ?? 0) > 0) edit('', 'empty');
      if (schema.enum) edit('not-in-enum', 'outside its enum');
    }
    if (types[0] === 'number' || types[0] === 'integer') {
      edit({}, 'as an object');
      edit('abc', 'as text');
      if (typeof value === 'number') {
        // Decisions, "Bounds": numbers given as numeric strings in bodies are accepted wherever a number is.
        edit(String(value), 'as a numeric string', 'accept');
        for (const c of numberCases(schema, value)) edit(c.n, `= ${c.n} (${c.why})`, c.expect);
        for (const n of UNSTORABLE_NUMBERS) edit(Number(n), `= ${n}`, 'survive');
      }
    }
    if (types[0] === 'array') {
      edit('text', 'as text');
      const items = Array.isArray(value) ? value : [];
      if (schema.maxItems !== undefined && schema.maxItems <= 20_000) {
        const item = items[0] ?? 'x';
        edit(Array.from({ length: schema.maxItems + 1 }, (_, i) => (typeof item === 'string' ? `${item}${i}` : item)), `of maxItems + 1 (${schema.maxItems + 1})`);
      }
      if ((schema.minItems ?? 0) > 0) edit([], 'empty');
    }
    if (types[0] === 'object') edit('text', 'as text');
  }
  if (types.includes('object') && value && typeof value === 'object' && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    if (schema.additionalProperties === false) {
      out.push({ label: `${field} with an unknown field`, request: apply(op, base, { where: 'body', at: [...at, 'unexpected_field'], value: 1 }), field, expect: 'reject' });
    }
    for (const name of schema.required ?? []) {
      const prop = schema.properties?.[name];
      if (name in object && prop && prop.default === undefined) {
        out.push({ label: `${field}.${name} missing`, request: apply(op, base, { where: 'body', at: [...at, name], value: undefined, remove: true }), field: [field, name].join('.'), expect: 'reject' });
      }
    }
    for (const [name, prop] of Object.entries(schema.properties ?? {})) {
      if (name in object && object[name] !== null) out.push(...bodyCases(op, base, prop, object[name], [...at, name]));
    }
  }
  return out;
}

/** Every text leaf of the example body (open sets included, which the schema does not list) with unstorable text. */
function textCases(op: ApiOperation, base: Baseline): ConstraintCase[] {
  const out: ConstraintCase[] = [];
  const walk = (value: unknown, at: string[]) => {
    if (typeof value === 'string') {
      for (const t of UNSTORABLE_TEXT) {
        const field = ['body', ...at].join('.');
        out.push({ label: `${field} holding ${JSON.stringify(t)}`, request: apply(op, base, { where: 'body', at, value: t }), field, expect: 'survive' });
      }
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, [...at, k]);
    }
  };
  walk(base.body, []);
  return out;
}

export function constraintCases(op: ApiOperation, base: Baseline): ConstraintCase[] {
  return [...paramCases(op, base), ...(op.body ? [...bodyCases(op, base, op.body, base.body, []), ...textCases(op, base)] : [])];
}

/** Whether a 400's errors name `field` (or something inside it). */
export const namesField = (paths: string[], field: string) => paths.some((p) => p === field || p.startsWith(`${field}.`) || p.startsWith(`${field}[`));
