import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { domainToASCII } from 'node:url';
import { sharedPath } from '@rampart/plugin-kit/testing';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

// Checks STIX 2.0 output against the OASIS oracle in ../shared/oracles/stix2.0: the JSON schemas
// (every file loaded, $refs resolved locally through their $id) and the pattern grammar
// (STIXPattern.g4), whose rules `checkPattern` follows for the forms the server emits.

// The oracle sits in the shared folder beside the checkout (sharedPath; RAMPART_SHARED_DIR moves it).
export const ORACLE_DIR = sharedPath('oracles/stix2.0');

function schemaFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? schemaFiles(join(dir, e.name)) : e.name.endsWith('.json') ? [join(dir, e.name)] : []));
}

const HOSTNAME = /^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$/i;

/**
 * An ajv holding every schema of an OASIS oracle folder (STIX 2.0 or 2.1: they refer to each other
 * by $id, so all are added before any is compiled).
 */
export function oracleAjv(schemasDir: string): Ajv2020 {
  // The schemas' patterns use escapes (\-) that only non-unicode regular expressions accept. They
  // name draft 2020-12 with an http URI and a '#', which is not the meta-schema's
  // registered id; they are validated by compiling them, not against the meta-schema.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, unicodeRegExp: false });
  addFormats.default(ajv);
  // ajv-formats has no idn-hostname (domain-name.value): a name whose IDNA ASCII form is a host name.
  ajv.addFormat('idn-hostname', (value: string) => {
    const ascii = domainToASCII(value);
    return ascii !== '' && HOSTNAME.test(ascii);
  });
  for (const file of schemaFiles(schemasDir)) ajv.addSchema(JSON.parse(readFileSync(file, 'utf8')));
  return ajv;
}

/** Validates a bundle against common/bundle.json; returns the errors (empty when valid). */
export function bundleValidator(): (bundle: unknown) => string[] {
  const ajv = oracleAjv(join(ORACLE_DIR, 'schemas'));
  const validate = ajv.getSchema('http://raw.githubusercontent.com/oasis-open/cti-stix2-json-schemas/stix2.0/schemas/common/bundle.json');
  if (!validate) throw new Error('bundle.json not found among the oracle schemas');
  return (bundle) => (validate(bundle) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`));
}

// Tokens of STIXPattern.g4 that the emitted patterns can contain, in the lexer's priority order.
const TOKENS: Array<[string, RegExp]> = [
  ['ws', /^\s+/],
  ['string', /^'(?:[^'\\]|\\'|\\\\)*'/],
  ['op', /^(?:AND|OR|NOT|LIKE|MATCHES|ISSUBSET|ISSUPERSET|IN)\b/],
  ['cmp', /^(?:=|!=|<>|<=|>=|<|>)/],
  ['ident', /^[a-zA-Z_][a-zA-Z0-9_-]*/],
  ['int', /^[+-]?(?:0|[1-9][0-9]*)(?![.0-9])/],
  ['punct', /^[[\]():.,]/],
];

function tokenize(pattern: string): Array<{ kind: string; text: string }> {
  const out: Array<{ kind: string; text: string }> = [];
  let rest = pattern;
  while (rest) {
    const hit = TOKENS.map(([kind, re]) => [kind, re.exec(rest)?.[0]] as const).find(([, m]) => m !== undefined);
    if (!hit) throw new Error(`pattern: no token at "${rest.slice(0, 20)}"`);
    const [kind, text] = hit as [string, string];
    if (kind !== 'ws') out.push({ kind, text });
    rest = rest.slice(text.length);
  }
  return out;
}

/**
 * Parses `pattern` by the grammar's rules (observationExpressions of simple observations joined
 * by AND/OR; comparisonExpression of propTests joined by AND/OR; objectPath = objectType ':'
 * firstPathComponent ('.' key | '[' index ']')*; StringLiteral with only \' and \\ escapes) and
 * returns the object paths it tests. Throws with the reason when the pattern breaks a rule.
 */
export function checkPattern(pattern: string): Array<{ objectType: string; path: string[]; operator: string; value: string }> {
  const tokens = tokenize(pattern);
  let i = 0;
  const peek = () => tokens[i];
  const take = (text?: string) => {
    const t = tokens[i];
    if (!t || (text !== undefined && t.text !== text)) throw new Error(`pattern: expected ${text ?? 'a token'} at token ${i} (${t?.text ?? 'end'})`);
    i += 1;
    return t;
  };
  const tests: Array<{ objectType: string; path: string[]; operator: string; value: string }> = [];
  const propTest = () => {
    if (peek()?.text === '(') {
      take('(');
      comparison();
      take(')');
      return;
    }
    const type = take();
    if (type.kind !== 'ident') throw new Error(`pattern: object type expected, got ${type.text}`);
    take(':');
    const first = take();
    if (first.kind !== 'string' && (first.kind !== 'ident' || first.text.includes('-'))) throw new Error(`pattern: bad first path component ${first.text}`);
    const path = [first.text];
    while (peek()?.text === '.' || peek()?.text === '[') {
      if (take().text === '.') {
        const key = take();
        if (key.kind !== 'string' && (key.kind !== 'ident' || key.text.includes('-'))) throw new Error(`pattern: bad key path step ${key.text}; hyphenated keys must be quoted`);
        path.push(key.text);
      } else {
        const index = take();
        if (index.kind !== 'int' && index.text !== '*') throw new Error(`pattern: bad index ${index.text}`);
        take(']');
      }
    }
    if (peek()?.text === 'NOT') take('NOT');
    const operator = take();
    if (operator.kind !== 'cmp' && !['LIKE', 'MATCHES', 'ISSUBSET', 'ISSUPERSET'].includes(operator.text)) throw new Error(`pattern: unsupported operator ${operator.text}`);
    const value = take();
    if (value.kind !== 'string' && value.kind !== 'int') throw new Error(`pattern: literal expected, got ${value.text}`);
    if (['LIKE', 'MATCHES', 'ISSUBSET', 'ISSUPERSET'].includes(operator.text) && value.kind !== 'string') throw new Error(`pattern: ${operator.text} takes a string`);
    tests.push({ objectType: type.text, path: path.map(unquote), operator: operator.text, value: value.kind === 'string' ? unquote(value.text) : value.text });
  };
  const comparison = () => {
    propTest();
    while (peek()?.text === 'AND' || peek()?.text === 'OR') {
      take();
      propTest();
    }
  };
  const observation = () => {
    take('[');
    comparison();
    take(']');
  };
  observation();
  while (peek()?.text === 'AND' || peek()?.text === 'OR') {
    take();
    observation();
  }
  if (i !== tokens.length) throw new Error(`pattern: trailing tokens from ${tokens[i]!.text}`);
  return tests;
}

function unquote(text: string): string {
  if (!text.startsWith("'")) return text;
  return text.slice(1, -1).replaceAll("\\'", "'").replaceAll('\\\\', '\\');
}
