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

function redact(value: unknown, keys: ReadonlySet<string>, replacement: string, path: object[]): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const isArray = Array.isArray(value);
  if (!isArray && !isPlainObject(value)) return value;
  // Only a cycle (an object inside itself) is cut; an object shared by two branches is walked twice.
  if (path.includes(value)) return CIRCULAR;
  path.push(value);
  let copy: unknown[] | PlainObject | undefined;
  if (isArray) {
    const list = value as unknown[];
    let out: unknown[] | undefined;
    for (let index = 0; index < list.length; index++) {
      const item = list[index];
      const next = redact(item, keys, replacement, path);
      if (next !== item) (out ??= [...list])[index] = next;
    }
    copy = out;
  } else {
    let out: PlainObject | undefined;
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      const item = value[key];
      const next = keys.has(key) && isSet(item) ? replacement : redact(item, keys, replacement, path);
      if (next !== item) (out ??= { ...value })[key] = next;
    }
    copy = out;
  }
  path.pop();
  // Copy on write: what holds no secret is returned as it is, so a log line without one costs a walk only.
  return copy ?? value;
}

/**
 * `value` with every set secret (a field named in `keys`) replaced by `replacement`, at any depth,
 * in arrays too; a cycle becomes '[Circular]'. Objects that hold no secret are returned unchanged.
 */
export function redactSecrets<T>(value: T, keys: ReadonlySet<string>, replacement: string = SECRET_MASK): T {
  return redact(value, keys, replacement, []) as T;
}
