import { AgentConfig } from './agent-config.ts';
import { SECRET_MASK } from './constants.ts';
import { isPlainObject, redactSecrets, secretKeysOf } from './secret-fields.ts';

export { CIRCULAR, composedOf, redactSecrets, secret, secretKeysOf } from './secret-fields.ts';

/** Field names declared secret in the agent configuration's schema, wherever they occur in it. */
export const AGENT_CONFIG_SECRET_KEYS: readonly string[] = secretKeysOf(AgentConfig);

/** A copy of `doc` with every set secret replaced by the mask, at any depth. */
export function maskSecrets<T>(doc: T, secretKeys: readonly string[] = AGENT_CONFIG_SECRET_KEYS): T {
  return redactSecrets(doc, new Set(secretKeys), SECRET_MASK);
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
