import { z } from 'zod';
import { SECRET_MASK } from './constants.ts';

/*
 * Secrets are declared once, in the schemas: `secret(schema)` marks a field, and every place a
 * secret must not show — masking on read, `print-config`, logs — derives the field names from the
 * schemas with `secretKeysOf` and replaces them with `redactSecrets`. No list of names is kept by hand.
 */

const SECRETS = z.registry<{ secret: true }>();
/** Schemas that validate through others the walker cannot see into (a transform choosing a backend). */
const PARTS = new WeakMap<z.core.$ZodType, readonly z.core.$ZodType[]>();

/** Marks a field's schema as a secret (wrap the finished schema: `.describe()` and the like make new instances). */
export function secret<S extends z.core.$ZodType>(schema: S): S {
  SECRETS.add(schema, { secret: true });
  return schema;
}

/** Declares the schemas an opaque schema validates through, so their secrets count as its own. */
export function composedOf<S extends z.core.$ZodType>(schema: S, parts: readonly z.core.$ZodType[]): S {
  PARTS.set(schema, parts);
  return schema;
}

type Def = Record<string, unknown> & { type: string };
const defOf = (schema: z.core.$ZodType): Def => schema._zod.def as unknown as Def;
const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);

function isSecret(schema: z.core.$ZodType): boolean {
  if (SECRETS.has(schema)) return true;
  const def = defOf(schema);
  if (WRAPPERS.has(def.type)) return isSecret(def.innerType as z.core.$ZodType);
  if (def.type === 'pipe') return isSecret(def.in as z.core.$ZodType) || isSecret(def.out as z.core.$ZodType);
  return false;
}

function collect(schema: z.core.$ZodType, keys: Set<string>, seen: Set<z.core.$ZodType>): void {
  if (seen.has(schema)) return;
  seen.add(schema);
  for (const part of PARTS.get(schema) ?? []) collect(part, keys, seen);
  const def = defOf(schema);
  const children: unknown[] = [];
  switch (def.type) {
    case 'object':
      for (const [key, field] of Object.entries(def.shape as Record<string, z.core.$ZodType>)) {
        if (isSecret(field)) keys.add(key);
        children.push(field);
      }
      children.push(def.catchall);
      break;
    case 'pipe':
      children.push(def.in, def.out);
      break;
    case 'array':
      children.push(def.element);
      break;
    case 'record':
    case 'map':
    case 'set':
      children.push(def.valueType);
      break;
    case 'union':
      children.push(...(def.options as unknown[]));
      break;
    case 'intersection':
      children.push(def.left, def.right);
      break;
    case 'tuple':
      children.push(...(def.items as unknown[]), def.rest);
      break;
    case 'lazy':
      children.push((def.getter as () => unknown)());
      break;
    default:
      if (WRAPPERS.has(def.type)) children.push(def.innerType);
  }
  for (const child of children) if (child) collect(child as z.core.$ZodType, keys, seen);
}

/** The names of the fields declared `secret` anywhere in these schemas, sorted. */
export function secretKeysOf(...schemas: readonly z.core.$ZodType[]): string[] {
  const keys = new Set<string>();
  const seen = new Set<z.core.$ZodType>();
  for (const schema of schemas) collect(schema, keys, seen);
  return [...keys].sort();
}

type PlainObject = Record<string, unknown>;

export function isPlainObject(value: unknown): value is PlainObject {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Unset secrets (null, missing, '') stay as they are so a client can tell "unset" from "set". */
function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

export const CIRCULAR = '[Circular]';

/** Decides whether a field name names a secret. */
export type SecretMatcher = (name: string) => boolean;

/**
 * Names that are secrets wherever they appear, declared or not (an integration label the
 * platform does not know, a plugin of another version, a header): matched case-insensitively.
 */
export const SECRET_NAME_PATTERN = /pass(?:word|wd|phrase)|secret|token$|private[_-]?key|api[_-]?key|auth[_-]?key|credential|jwt/i;

/**
 * The matcher of `names` (compared case-insensitively) and of everything named like a secret
 * (SECRET_NAME_PATTERN). Results are remembered per name (bounded), as log lines repeat names.
 */
export function secretMatcher(names: Iterable<string>, pattern: RegExp | null = SECRET_NAME_PATTERN): SecretMatcher {
  const lower = new Set([...names].map((n) => n.toLowerCase()));
  const seen = new Map<string, boolean>();
  return (name) => {
    let hit = seen.get(name);
    if (hit === undefined) {
      hit = lower.has(name.toLowerCase()) || (pattern !== null && pattern.test(name));
      if (seen.size < 10_000) seen.set(name, hit);
    }
    return hit;
  };
}

function matcherOf(keys: ReadonlySet<string> | SecretMatcher): SecretMatcher {
  return typeof keys === 'function' ? keys : secretMatcher(keys, null);
}

/** `"name": value` pairs inside text (JSON in a string, a message quoting a body). */
const JSON_PAIR = /"([^"\\]{1,200})"(\s*:\s*)("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|true|false)/g;

function redactText(text: string, isSecret: SecretMatcher, replacement: string): string {
  if (!text.includes('":')  && !text.includes('" :')) return text;
  return text.replace(JSON_PAIR, (pair, key: string, colon: string, value: string) => (isSecret(key) && value !== '""' ? `"${key}"${colon}${JSON.stringify(replacement)}` : pair));
}

interface RedactOptions {
  isSecret: SecretMatcher;
  replacement: string;
  /** Also redact `"name": value` pairs inside strings (logs), and walk Error objects. */
  deep: boolean;
}

function redactError(error: Error, o: RedactOptions, path: object[]): Error {
  let changed = false;
  const props: [string, PropertyDescriptor][] = [];
  for (const name of Object.getOwnPropertyNames(error)) {
    const descriptor = Object.getOwnPropertyDescriptor(error, name)!;
    if (!('value' in descriptor)) continue;
    const item: unknown = descriptor.value;
    const next = o.isSecret(name) && isSet(item) ? o.replacement : redact(item, o, path);
    if (next !== item) changed = true;
    props.push([name, { ...descriptor, value: next }]);
  }
  if (!changed) return error;
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error;
  for (const [name, descriptor] of props) Object.defineProperty(copy, name, descriptor);
  return copy;
}

function redact(value: unknown, o: RedactOptions, path: object[]): unknown {
  if (typeof value === 'string') return o.deep ? redactText(value, o.isSecret, o.replacement) : value;
  if (typeof value !== 'object' || value === null) return value;
  const isArray = Array.isArray(value);
  const isError = o.deep && value instanceof Error;
  if (!isArray && !isError && !isPlainObject(value)) return value;
  // Only a cycle (an object inside itself) is cut; an object shared by two branches is walked twice.
  if (path.includes(value)) return CIRCULAR;
  path.push(value);
  let copy: unknown;
  if (isError) {
    copy = redactError(value as Error, o, path);
    if (copy === value) copy = undefined;
  } else if (isArray) {
    const list = value as unknown[];
    let out: unknown[] | undefined;
    for (let index = 0; index < list.length; index++) {
      const item = list[index];
      const next = redact(item, o, path);
      if (next !== item) (out ??= [...list])[index] = next;
    }
    copy = out;
  } else {
    const object = value as PlainObject;
    let out: PlainObject | undefined;
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue;
      const item = object[key];
      const next = o.isSecret(key) && isSet(item) ? o.replacement : redact(item, o, path);
      if (next !== item) (out ??= { ...object })[key] = next;
    }
    copy = out;
  }
  path.pop();
  // Copy on write: what holds no secret is returned as it is, so a log line without one costs a walk only.
  return copy ?? value;
}

/**
 * `value` with every set secret (a field `keys` names: a set of names, compared
 * case-insensitively, or a matcher) replaced by `replacement`, at any depth, in arrays too; a
 * cycle becomes '[Circular]'. Objects that hold no secret are returned unchanged.
 */
export function redactSecrets<T>(value: T, keys: ReadonlySet<string> | SecretMatcher, replacement: string = SECRET_MASK): T {
  return redact(value, { isSecret: matcherOf(keys), replacement, deep: false }, []) as T;
}

/**
 * As redactSecrets, for log lines: also walks Error objects (their own properties, `cause`
 * included; the copy keeps the Error's prototype) and redacts `"name": value` pairs of secrets
 * inside strings (JSON bodies in messages).
 */
export function redactLogSecrets<T>(value: T, keys: ReadonlySet<string> | SecretMatcher, replacement: string): T {
  return redact(value, { isSecret: matcherOf(keys), replacement, deep: true }, []) as T;
}
