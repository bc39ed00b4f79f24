import { SECRET_MASK } from './constants.ts';

/** Field names whose values are secrets wherever they occur in an agent configuration. */
export const AGENT_CONFIG_SECRET_KEYS = [
  'password',
  'router_password',
  'cdn_waf_x_auth_key',
  'secretAccessKey',
  'private_key',
  'api_jwt_key',
] as const;

type PlainObject = Record<string, unknown>;

function isPlainObject(value: unknown): value is PlainObject {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Unset secrets (null, missing, '') stay as they are so a client can tell "unset" from "set". */
function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

function mask(value: unknown, keys: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((item) => mask(item, keys));
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, keys.has(key) && isSet(item) ? SECRET_MASK : mask(item, keys)]),
  );
}

/** A copy of `doc` with every set secret replaced by the mask, at any depth. */
export function maskSecrets<T>(doc: T, secretKeys: readonly string[] = AGENT_CONFIG_SECRET_KEYS): T {
  return mask(doc, new Set(secretKeys)) as T;
}

function merge(incoming: unknown, stored: unknown, keys: ReadonlySet<string>): unknown {
  if (Array.isArray(incoming)) {
    return incoming.map((item, index) => merge(item, Array.isArray(stored) ? stored[index] : undefined, keys));
  }
  if (!isPlainObject(incoming)) return incoming;
  const prior = isPlainObject(stored) ? stored : {};
  const entries: [string, unknown][] = [];
  for (const [key, item] of Object.entries(incoming)) {
    if (keys.has(key) && item === SECRET_MASK) {
      // Nothing stored to keep: drop the mask rather than store it as the secret.
      if (Object.hasOwn(prior, key) && prior[key] !== undefined) entries.push([key, prior[key]]);
      continue;
    }
    entries.push([key, merge(item, Object.hasOwn(prior, key) ? prior[key] : undefined, keys)]);
  }
  return Object.fromEntries(entries);
}

/**
 * A copy of `incoming` (a document written back by a client) in which each secret still
 * equal to the mask takes the value at the same path in `stored`.
 */
export function mergeMaskedSecrets<T>(incoming: T, stored: unknown, secretKeys: readonly string[] = AGENT_CONFIG_SECRET_KEYS): T {
  return merge(incoming, stored, new Set(secretKeys)) as T;
}
