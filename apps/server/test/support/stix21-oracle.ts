import { join } from 'node:path';
import { sharedPath } from '@rampart/plugin-kit/testing';
import { oracleAjv } from './stix-oracle.ts';

// Checks STIX 2.1 output against the OASIS oracle in ../shared/oracles/stix2.1: the JSON schemas
// (every file under schemas/ added to ajv's 2020-12 build before compiling: they refer to each
// other by $id) and the pattern grammar (pattern_grammar/STIXPattern.g4), which `parsePattern`
// implements as a lexer with ANTLR's rules (longest match, then the rule written first) and a
// recursive-descent parser of the grammar's productions (its left-recursive rules as loops, same
// precedence: FOLLOWEDBY < OR < AND for observations, OR < AND for comparisons).

export const ORACLE21_DIR = sharedPath('oracles/stix2.1');

const SCHEMA_BASE = 'http://raw.githubusercontent.com/oasis-open/cti-stix2-json-schemas/stix2.1/schemas/';

/**
 * Validates STIX 2.1 objects and bundles: a bundle against common/bundle.json, an SDO against
 * sdos/<type>.json, an SRO against sros/<type>.json. Returns the errors (empty when valid).
 */
export function stix21Validator(): (value: { type?: unknown }) => string[] {
  const ajv = oracleAjv(join(ORACLE21_DIR, 'schemas'));
  return (value) => {
    const type = String(value.type);
    const path = type === 'bundle' ? 'common/bundle.json' : ['relationship', 'sighting'].includes(type) ? `sros/${type}.json` : `sdos/${type}.json`;
    const validate = ajv.getSchema(`${SCHEMA_BASE}${path}`);
    if (!validate) return [`no schema for type ${type}`];
    return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
  };
}

// ---- STIXPattern.g4: lexer ----

interface Token {
  type: string;
  text: string;
}

const TWO_HEX = '[A-Fa-f0-9]{2}';
const B64 = '[A-Za-z0-9+/]';
const INT = '(?:0|[1-9][0-9]*)';
const TIMESTAMP = "t'[0-9]{4}-(?:0[1-9]|1[012])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?Z'";
const WS_CHARS = '[ \\t\\r\\n\\u000B\\u000C\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+';

/** The grammar's lexer rules in the order written (ANTLR breaks ties of equal length by this order). */
const LEXER_RULES: Array<[string, RegExp]> = (
  [
    ['IntNegLiteral', `-${INT}`],
    ['IntPosLiteral', `\\+?${INT}`],
    ['FloatNegLiteral', '-[0-9]*\\.[0-9]+'],
    ['FloatPosLiteral', '\\+?[0-9]*\\.[0-9]+'],
    ['HexLiteral', `h'(?:${TWO_HEX})*'`],
    ['BinaryLiteral', `b'(?:${B64}{4})*(?:${B64}{4}|${B64}{3}=|${B64}{2}==)'`],
    ['StringLiteral', "'(?:[^'\\\\]|\\\\'|\\\\\\\\)*'"],
    ['BoolLiteral', '(?:true|false)'],
    ['TimestampLiteral', TIMESTAMP],
    ['AND', 'AND'],
    ['OR', 'OR'],
    ['NOT', 'NOT'],
    ['FOLLOWEDBY', 'FOLLOWEDBY'],
    ['LIKE', 'LIKE'],
    ['MATCHES', 'MATCHES'],
    ['ISSUPERSET', 'ISSUPERSET'],
    ['ISSUBSET', 'ISSUBSET'],
    ['EXISTS', 'EXISTS'],
    ['LAST', 'LAST'],
    ['IN', 'IN'],
    ['START', 'START'],
    ['STOP', 'STOP'],
    ['SECONDS', 'SECONDS'],
    ['TRUE', 'true'],
    ['FALSE', 'false'],
    ['WITHIN', 'WITHIN'],
    ['REPEATS', 'REPEATS'],
    ['TIMES', 'TIMES'],
    ['IdentifierWithoutHyphen', '[a-zA-Z_][a-zA-Z0-9_]*'],
    ['IdentifierWithHyphen', '[a-zA-Z_][a-zA-Z0-9_-]*'],
    ['EQ', '(?:==|=)'],
    ['NEQ', '(?:!=|<>)'],
    ['LT', '<'],
    ['LE', '<='],
    ['GT', '>'],
    ['GE', '>='],
    ['QUOTE', "'"],
    ['COLON', ':'],
    ['DOT', '\\.'],
    ['COMMA', ','],
    ['RPAREN', '\\)'],
    ['LPAREN', '\\('],
    ['RBRACK', '\\]'],
    ['LBRACK', '\\['],
    ['PLUS', '\\+'],
    ['HYPHEN', '-'],
    ['MINUS', '-'],
    ['POWER_OP', '\\^'],
    ['DIVIDE', '/'],
    ['ASTERISK', '\\*'],
    ['WS', WS_CHARS],
    ['COMMENT', '/\\*[\\s\\S]*?\\*/'],
    ['LINE_COMMENT', '//[^\\r\\n]*'],
    ['InvalidCharacter', '[\\s\\S]'],
  ] as const
).map(([name, source]) => [name, new RegExp(`^(?:${source})`, 'u')]);

const SKIPPED = new Set(['WS', 'COMMENT', 'LINE_COMMENT']);

export function lexPattern(input: string): Token[] {
  const tokens: Token[] = [];
  let rest = input;
  while (rest.length > 0) {
    let best: Token | undefined;
    for (const [type, re] of LEXER_RULES) {
      const m = re.exec(rest);
      if (m && m[0].length > 0 && (!best || m[0].length > best.text.length)) best = { type, text: m[0] };
    }
    // InvalidCharacter matches any one character, so there always is a token.
    tokens.push(best!);
    rest = rest.slice(best!.text.length);
  }
  return tokens.filter((t) => !SKIPPED.has(t.type));
}

// ---- STIXPattern.g4: parser ----

export interface PropTest {
  objectType: string;
  /** firstPathComponent, then each step: keys unquoted, indexes as `[n]` or `[*]`. */
  path: string[];
  negated: boolean;
  operator: string;
  /** The literal(s) compared with: their token type and text (strings unquoted). */
  values: Array<{ type: string; value: string }>;
}

/**
 * Parses `pattern` by STIXPattern.g4 (rule `pattern`) and returns its property tests in order.
 * Throws `pattern: …` naming the offending token when the grammar rejects it.
 */
export function parsePattern(pattern: string): PropTest[] {
  const tokens = lexPattern(pattern);
  let i = 0;
  const tests: PropTest[] = [];
  const peek = (k = 0) => tokens[i + k];
  const is = (...types: string[]) => types.includes(peek()?.type ?? 'EOF');
  const fail = (what: string): never => {
    throw new Error(`pattern: ${what} expected at token ${i} (${peek() ? `${peek()!.type} '${peek()!.text}'` : 'EOF'})`);
  };
  const take = (...types: string[]): Token => (is(...types) ? tokens[i++]! : fail(types.join(' or ')));

  // pattern : observationExpressions EOF
  const patternRule = () => {
    observationExpressions();
    if (i !== tokens.length) fail('EOF');
  };
  // observationExpressions : observationExpressions FOLLOWEDBY observationExpressions | observationExpressionOr
  const observationExpressions = () => {
    observationExpressionOr();
    while (is('FOLLOWEDBY')) {
      take('FOLLOWEDBY');
      observationExpressionOr();
    }
  };
  const observationExpressionOr = () => {
    observationExpressionAnd();
    while (is('OR')) {
      take('OR');
      observationExpressionAnd();
    }
  };
  const observationExpressionAnd = () => {
    observationExpression();
    while (is('AND')) {
      take('AND');
      observationExpression();
    }
  };
  // observationExpression : '[' comparisonExpression ']' | '(' observationExpressions ')' | observationExpression qualifier
  const observationExpression = () => {
    if (is('LBRACK')) {
      take('LBRACK');
      comparisonExpression();
      take('RBRACK');
    } else if (is('LPAREN')) {
      take('LPAREN');
      observationExpressions();
      take('RPAREN');
    } else fail("'[' or '('");
    for (;;) {
      if (is('START')) {
        take('START');
        take('TimestampLiteral');
        take('STOP');
        take('TimestampLiteral');
      } else if (is('WITHIN')) {
        take('WITHIN');
        take('IntPosLiteral', 'FloatPosLiteral');
        take('SECONDS');
      } else if (is('REPEATS')) {
        take('REPEATS');
        take('IntPosLiteral');
        take('TIMES');
      } else return;
    }
  };
  const comparisonExpression = () => {
    comparisonExpressionAnd();
    while (is('OR')) {
      take('OR');
      comparisonExpressionAnd();
    }
  };
  const comparisonExpressionAnd = () => {
    propTest();
    while (is('AND')) {
      take('AND');
      propTest();
    }
  };
  const ORDERABLE = ['IntPosLiteral', 'IntNegLiteral', 'FloatPosLiteral', 'FloatNegLiteral', 'StringLiteral', 'BinaryLiteral', 'HexLiteral', 'TimestampLiteral'];
  const PRIMITIVE = [...ORDERABLE, 'BoolLiteral'];
  const literal = (types: string[]) => {
    const t = take(...types);
    return { type: t.type, value: t.type === 'StringLiteral' ? unquote(t.text) : t.text };
  };
  const propTest = () => {
    if (is('LPAREN')) {
      take('LPAREN');
      comparisonExpression();
      take('RPAREN');
      return;
    }
    if (is('EXISTS') || (is('NOT') && peek(1)?.type === 'EXISTS')) {
      const negated = is('NOT');
      if (negated) take('NOT');
      take('EXISTS');
      const { objectType, path } = objectPath();
      tests.push({ objectType, path, negated, operator: 'EXISTS', values: [] });
      return;
    }
    const { objectType, path } = objectPath();
    const negated = is('NOT');
    if (negated) take('NOT');
    const op = take('EQ', 'NEQ', 'GT', 'LT', 'GE', 'LE', 'IN', 'LIKE', 'MATCHES', 'ISSUBSET', 'ISSUPERSET');
    let values: PropTest['values'];
    if (op.type === 'EQ' || op.type === 'NEQ') values = [literal(PRIMITIVE)];
    else if (['GT', 'LT', 'GE', 'LE'].includes(op.type)) values = [literal(ORDERABLE)];
    else if (op.type === 'IN') {
      take('LPAREN');
      values = [];
      if (!is('RPAREN')) {
        values.push(literal(PRIMITIVE));
        while (is('COMMA')) {
          take('COMMA');
          values.push(literal(PRIMITIVE));
        }
      }
      take('RPAREN');
    } else values = [literal(['StringLiteral'])];
    tests.push({ objectType, path, negated, operator: op.text, values });
  };
  // objectPath : objectType ':' firstPathComponent objectPathComponent?
  const objectPath = () => {
    const objectType = take('IdentifierWithoutHyphen', 'IdentifierWithHyphen').text;
    take('COLON');
    const first = take('IdentifierWithoutHyphen', 'StringLiteral');
    const path = [unquote(first.text)];
    for (;;) {
      if (is('DOT')) {
        take('DOT');
        path.push(unquote(take('IdentifierWithoutHyphen', 'StringLiteral').text));
      } else if (is('LBRACK') && ['IntPosLiteral', 'IntNegLiteral', 'ASTERISK'].includes(peek(1)?.type ?? '')) {
        take('LBRACK');
        path.push(`[${take('IntPosLiteral', 'IntNegLiteral', 'ASTERISK').text}]`);
        take('RBRACK');
      } else return { objectType, path };
    }
  };

  patternRule();
  return tests;
}

function unquote(text: string): string {
  if (!text.startsWith("'")) return text;
  return text.slice(1, -1).replace(/\\(['\\])/g, '$1');
}
