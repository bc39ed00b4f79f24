import fc from 'fast-check';
import { fillPath, isNumeric, pathParams, queryParams, queryString, type ApiOperation, type JsonSchema } from './openapi-operations.ts';
import type { ProbeRequest } from './response-checks.ts';

/**
 * fast-check arbitraries of malformed requests for one OpenAPI operation: a valid request
 * (the baseline) with one to three things broken — a path parameter, a query parameter, a
 * body field anywhere in the document, the JSON text, the content type or a header.
 */

/** Strings that trip parsers, coercions, databases and logs. */
const ODD_TEXT = [
  '', ' ', '0', '-0', '-1', '1e309', '-1e309', '1e-400', 'NaN', 'Infinity', '-Infinity', '0x1F', '0b11', '0o7', '1_000', '1,5',
  '9007199254740993', '99999999999999999999999999', '1.5', '+1', '00', ' 1', '1 ', 'true', 'false', 'null', 'undefined',
  '[]', '{}', '[object Object]', '__proto__', 'constructor', 'prototype', 'hasOwnProperty', '\u0000', 'a\u0000b', '\u0000\u0000\u0000',
  '😀', '\u202e', '\ufeff', '\u0085', '\u2028', 'ǅ', 'İ', 'ß', '../../etc/passwd', "'; drop table agents; --", "' OR '1'='1",
  '%s%n', '${7*7}', '{{7*7}}', '<script>alert(1)</script>', '\r\nX-Injected: 1', '\\', '"', '`', '\t', '\\u0000',
];

/** Near misses of the identifiers the API's paths and bodies carry. */
const ODD_IDENTIFIERS = [
  '256.0.0.1', '1.2.3', '1.2.3.4.5', '01.2.3.4', '1.2.3.4/33', '1.2.3.4/-1', '1.2.3.4/', '203.0.113.0/24', '0.0.0.0/0', '::1',
  '::ffff:203.0.113.7', '2001:db8::/32', '0.0.0.0', '255.255.255.255', '127.0.0.1', '１.２.３.４', '1.2.3.4 ', '1.2.3.4\u0000',
  '-a.com', 'a-.com', 'a..com', '.com', 'com', 'xn--.com', 'xn--zz-zz.com', `${'a'.repeat(64)}.com`, `${'a.'.repeat(127)}com`,
  'exa mple.com', '例え.テスト', 'localhost', 'EXAMPLE.COM.', 'javascript:alert(1)', 'http://', 'http://[::1', 'ftp://x',
  'file:///etc/passwd', 'http://exa mple.com', `https://a.example/${'x'.repeat(2100)}`, 'data:text/html,x', 'mailto:a@b.example',
  'http://user:pass@a.example:99999/', 'HTTP://A.EXAMPLE/%zz', 'g'.repeat(64), 'a'.repeat(63), 'A'.repeat(65), `${'a'.repeat(32)} `,
  'RMP-VID-LIC', `RMP-VID-LIC${'x'.repeat(200)}`, 'RMP-VID-LIC-../x', 'RMP-AGENT-ID-', 'RMP-AGENT-ID-ä', `RMP-AGENT-ID-${'A'.repeat(200)}`,
  'rmp-agent-id-abc', 'RMP-AGENT-ID-feedback', '000000000000', 'zzzzzzzzzzzz', '0123456789abc', 'RMP-GID-0', 'indicator--00000000-0000-0000-0000-000000000000',
];

/** Path segments sent without encoding: broken escapes, traversal, invalid UTF-8. */
const RAW_SEGMENTS = ['%', '%zz', '%FF', '%C0%AF', '%00', '%2e%2e', '..', '.', '%2F', 'a%2Fb', '%E2%80%AE', '%ED%A0%80', '%25', '%u0041', '%0D%0A'];

const BAD_JSON_TEXT = [
  '{', '{"a":', '{"a":1,}', "{'a':1}", 'nul', '[', '"', '\u0000', '{"a":1}{"b":2}', '1e309', '{"x":1e309}', '{"x":-1e309}', '{"a":"\\ud800"}',
  '\ufeff{}', '', ' ', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '[]', '0', '"text"', 'null', 'true', '{"a":"\\u0000"}',
  '{"a":01}', '{"a":.5}', '{"a":NaN}', '{"a":Infinity}', '\n\n\n', '{}'.padEnd(5000, ' '),
];

const CONTENT_TYPES = [
  'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1',
  'application/json; charset=utf-16', 'application/xml', 'application/json-patch+json', 'application/JSON', '*/*', 'application/',
  'application/json; charset=utf-8; boundary=x', ';;;', 'application/json\u0000',
];

/** Non-ASCII or control characters are not legal in a header value: light-my-request refuses them, so headers stay ASCII. */
const ODD_HEADERS: Array<[string, (key: string) => string]> = [
  ['authorization', () => 'garbage'],
  ['authorization', () => 'Bearer'],
  ['authorization', () => 'Bearer '],
  ['authorization', (k) => `Bearer Bearer ${k}`],
  ['authorization', (k) => `Basic ${k}`],
  ['authorization', (k) => `${k}x`],
  ['authorization', (k) => k.toUpperCase()],
  ['authorization', (k) => k.slice(0, -1)],
  ['authorization', () => `rmp_${'0'.repeat(12)}_${'A'.repeat(43)}`],
  ['authorization', () => `rmp_${'z'.repeat(12)}_${'%'.repeat(43)}`],
  ['authorization', () => 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.'],
  ['authorization', () => 'eyJhbGciOiJIUzI1NiJ9.e30.AAAA'],
  ['authorization', () => 'x'.repeat(10_000)],
  ['accept', () => 'application/xml'],
  ['accept', () => 'text/csv;q=0'],
  ['if-none-match', () => '"\\"'],
  ['if-none-match', () => '*'],
  ['if-none-match', () => `W/"${'a'.repeat(3000)}"`],
  ['if-modified-since', () => 'yesterday'],
  ['x-forwarded-for', () => '999.999.999.999, garbage'],
  ['range', () => 'bytes=-1-'],
  ['content-encoding', () => 'gzip'],
  ['transfer-encoding', () => 'chunked'],
];

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** encodeURIComponent, with lone surrogates (which it refuses) sent as their invalid UTF-8 bytes. */
export const encodeSegment = (s: string) => s.split(LONE_SURROGATE).map((part) => encodeURIComponent(part)).join('%ED%A0%80');

/** Numbers on and just beyond a schema's declared bounds (exclusive bounds included). */
export function boundaryNumbers(s: JsonSchema): number[] {
  const out = new Set<number>([-1, 0, 1, 0.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 53), 1e21]);
  for (const b of [s.minimum, s.maximum, s.exclusiveMinimum, s.exclusiveMaximum]) {
    if (b === undefined) continue;
    for (const d of [-1, -0.5, 0, 0.5, 1]) out.add(b + d);
  }
  if (s.maxLength !== undefined) out.add(s.maxLength + 1);
  return [...out];
}

const oddScalarText = (s: JsonSchema | undefined) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ODD_TEXT) },
    { weight: 3, arbitrary: fc.constantFrom(...ODD_IDENTIFIERS) },
    { weight: 2, arbitrary: fc.constantFrom(...boundaryNumbers(s ?? {}).flatMap((n) => [String(n), n.toExponential(), ` ${n}`, `${n}abc`])) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
    { weight: 1, arbitrary: fc.double().map(String) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 2_500 }).map((n) => (s?.maxLength !== undefined && n % 2 === 0 ? 'a'.repeat(s.maxLength + 1) : '€'.repeat(n))) },
  );

const DEEP_MARKER = '\u0001deep\u0001';
/** JSON values of the wrong type, size or shape for wherever they are put. */
const oddJsonValue = (s: JsonSchema | undefined): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 2, 2 ** 31, -(2 ** 31) - 1, 2 ** 64, '', [], {}, [null], { '': null }, [[[]]]) },
    { weight: 2, arbitrary: fc.constantFrom<unknown>(...boundaryNumbers(s ?? {}), ...boundaryNumbers(s ?? {}).map(String)) },
    { weight: 2, arbitrary: oddScalarText(s) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.constant(DEEP_MARKER) },
    { weight: 1, arbitrary: fc.tuple(fc.jsonValue({ maxDepth: 1 }), fc.integer({ min: 1, max: 3 })).map(([item, k]) => Array.from({ length: (s?.maxItems ?? 100) + k }, () => item)) },
  );

/** A request being assembled: path values and query pairs already encoded, body as a value or raw text. */
interface Draft {
  path: Record<string, string>;
  query: Array<[string, string]>;
  body: { value: unknown } | { raw: string } | undefined;
  contentType: string | undefined;
  headers: Record<string, string>;
  deepDepth: number;
}

type Mutation = (d: Draft, ctx: { key: string }) => void;

type Segment = string | number;
/** Every place inside a JSON document where a value sits, root first. */
function jsonPaths(value: unknown, prefix: Segment[] = []): Segment[][] {
  const out: Segment[][] = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...jsonPaths(v, [...prefix, i])));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...jsonPaths(v, [...prefix, k]));
  return out;
}

/** The schema of the value at `path` when the document declares one (objects and arrays only). */
function schemaAt(schema: JsonSchema | undefined, path: Segment[]): JsonSchema | undefined {
  let s = schema;
  for (const seg of path) {
    if (!s) return undefined;
    s = typeof seg === 'number' ? s.items : s.properties?.[seg];
  }
  return s;
}

function setAt(root: { value: unknown }, path: Segment[], update: (parent: Record<string | number, unknown>, key: Segment) => void) {
  if (path.length === 0) {
    update(root as unknown as Record<string, unknown>, 'value');
    return;
  }
  // An earlier mutation may have removed or replaced a parent: then there is nothing to change.
  let node = root.value as Record<string | number, unknown>;
  for (const seg of path.slice(0, -1)) {
    if (node === null || typeof node !== 'object') return;
    node = node[seg] as Record<string | number, unknown>;
  }
  if (node !== null && typeof node === 'object') update(node, path[path.length - 1]!);
}

function bodyMutations(op: ApiOperation, baseline: unknown): fc.Arbitrary<Mutation>[] {
  const schema = op.body;
  const paths = jsonPaths(baseline);
  const containers = paths.filter((p) => {
    let v: unknown = baseline;
    for (const seg of p) v = (v as Record<string | number, unknown>)[seg];
    return v !== null && typeof v === 'object';
  });
  const setValue = fc.constantFrom(...paths).chain((path) =>
    oddJsonValue(schemaAt(schema, path)).map((value): Mutation => (d) => {
      if (!d.body || !('value' in d.body)) return;
      setAt(d.body, path, (parent, key) => {
        if (parent && typeof parent === 'object') parent[key] = value;
      });
    }),
  );
  const remove = fc.constantFrom(...paths.filter((p) => p.length > 0)).map((path): Mutation => (d) => {
    if (!d.body || !('value' in d.body)) return;
    setAt(d.body, path, (parent, key) => {
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else if (parent && typeof parent === 'object') delete parent[key];
    });
  });
  const extra = fc
    .tuple(fc.constantFrom(...containers), fc.constantFrom('__proto__', 'constructor', 'prototype', 'unexpected', '', '😀', 'a\u0000b', 'x'.repeat(300)), oddJsonValue(undefined))
    .map(([path, key, value]): Mutation => (d) => {
      if (!d.body || !('value' in d.body)) return;
      setAt(d.body, path, (parent, k) => {
        const target = parent[k];
        if (Array.isArray(target)) target.push(value);
        else if (target && typeof target === 'object') Object.defineProperty(target, key, { value, enumerable: true, configurable: true, writable: true });
      });
    });
  const replace = fc.oneof(oddJsonValue(schema), fc.jsonValue({ maxDepth: 4 })).map((value): Mutation => (d) => {
    d.body = { value };
  });
  const deep = fc.integer({ min: 64, max: 6000 }).map((depth): Mutation => (d) => {
    d.deepDepth = depth;
  });
  const text = fc.constantFrom(...BAD_JSON_TEXT).map((raw): Mutation => (d) => {
    d.body = { raw };
  });
  const type = fc.constantFrom(...CONTENT_TYPES, undefined).map((t): Mutation => (d) => {
    d.contentType = t;
  });
  return [setValue, setValue, setValue, remove, remove, extra, replace, deep, text, type];
}

function queryMutations(op: ApiOperation): fc.Arbitrary<Mutation>[] {
  const params = queryParams(op);
  const names = [...params.map((p) => p.name), '__proto__', 'constructor', 'unexpected', 'ts[]', 'a[b]', ''];
  const set = fc
    .tuple(fc.constantFrom(...names), fc.boolean())
    .chain(([name, add]) => oddScalarText(params.find((p) => p.name === name)?.schema).map((value): Mutation => (d) => {
      const pair: [string, string] = [encodeSegment(name), encodeSegment(value)];
      if (add) d.query.push(pair);
      else d.query = [...d.query.filter(([k]) => k !== pair[0]), pair];
    }));
  const repeat = fc.constantFrom(...names).map((name): Mutation => (d) => {
    const first = d.query.find(([k]) => k === name)?.[1] ?? '1';
    d.query.push([name, first], [name, first]);
  });
  const removeAll = fc.constant<Mutation>((d) => {
    d.query = [];
  });
  const raw = fc.constantFrom(...RAW_SEGMENTS).map((r): Mutation => (d) => {
    d.query.push([params[0]?.name ?? 'q', r]);
  });
  return [set, set, set, repeat, removeAll, raw];
}

function pathMutations(op: ApiOperation): fc.Arbitrary<Mutation>[] {
  const params = pathParams(op);
  if (params.length === 0) return [];
  const encoded = fc
    .tuple(fc.constantFrom(...params), fc.boolean())
    .chain(([p]) => oddScalarText(p.schema).map((value): Mutation => (d) => {
      d.path[p.name] = encodeSegment(value);
    }));
  const raw = fc.tuple(fc.constantFrom(...params), fc.constantFrom(...RAW_SEGMENTS)).map(([p, r]): Mutation => (d) => {
    d.path[p.name] = r;
  });
  const numeric = params.filter((p) => isNumeric(p.schema));
  const bounds = numeric.length
    ? [fc.constantFrom(...numeric).chain((p) => fc.constantFrom(...boundaryNumbers(p.schema)).map((n): Mutation => (d) => {
        d.path[p.name] = encodeSegment(String(n));
      }))]
    : [];
  return [encoded, encoded, raw, ...bounds];
}

function transportMutations(op: ApiOperation): fc.Arbitrary<Mutation>[] {
  const header = fc.constantFrom(...ODD_HEADERS).map(([name, make]): Mutation => (d, ctx) => {
    d.headers[name] = make(ctx.key);
  });
  const noAuth = fc.constant<Mutation>((d) => {
    delete d.headers.authorization;
  });
  if (op.body) return [header, noAuth];
  // Bodies where none is expected.
  const strayBody = fc.tuple(fc.constantFrom(...BAD_JSON_TEXT, '{"a":1}'), fc.constantFrom('application/json', 'text/plain', undefined)).map(([raw, t]): Mutation => (d) => {
    d.body = { raw };
    d.contentType = t;
  });
  return [header, noAuth, strayBody];
}

function render(op: ApiOperation, d: Draft): ProbeRequest {
  const headers: Record<string, string> = { ...d.headers };
  let payload: string | undefined;
  if (d.body) {
    payload = 'raw' in d.body ? d.body.raw : JSON.stringify(d.body.value) ?? 'null';
    if (d.deepDepth > 0) {
      const deep = `${'['.repeat(d.deepDepth)}{"a":${'{"b":'.repeat(8)}1${'}'.repeat(8)}}${']'.repeat(d.deepDepth)}`;
      payload = payload.includes(JSON.stringify(DEEP_MARKER)) ? payload.replace(JSON.stringify(DEEP_MARKER), deep) : deep;
    }
    if (d.contentType !== undefined) headers['content-type'] = d.contentType;
  }
  const url = fillPath(op.path, d.path) + queryString(d.query);
  return { method: op.method, url, headers, ...(payload === undefined ? {} : { payload }) };
}

export interface Baseline {
  path: Record<string, string>;
  query: Array<[string, string]>;
  body: unknown;
  key: string;
}

/** Malformed requests for `op`: the valid baseline with one to three things broken. */
export function malformedRequests(op: ApiOperation, base: Baseline): fc.Arbitrary<ProbeRequest> {
  const kinds = [...pathMutations(op), ...queryMutations(op), ...(op.body ? bodyMutations(op, base.body) : []), ...transportMutations(op)];
  return fc.array(fc.oneof(...kinds), { minLength: 1, maxLength: 3 }).map((mutations) => {
    const draft: Draft = {
      path: { ...base.path },
      query: [...base.query],
      body: op.body ? { value: structuredClone(base.body) } : undefined,
      contentType: op.body ? 'application/json' : undefined,
      headers: { authorization: base.key },
      deepDepth: 0,
    };
    for (const m of mutations) m(draft, { key: base.key });
    return render(op, draft);
  });
}

/** The valid baseline itself, rendered as a request. */
export function baselineRequest(op: ApiOperation, base: Baseline): ProbeRequest {
  return render(op, {
    path: { ...base.path },
    query: [...base.query],
    body: op.body ? { value: structuredClone(base.body) } : undefined,
    contentType: op.body ? 'application/json' : undefined,
    headers: { authorization: base.key },
    deepDepth: 0,
  });
}
