import { AgentConfig } from './agent-config.ts';
import { SECRET_MASK } from './constants.ts';
import { isPlainObject, redactSecrets, secretKeysOf, secretMatcher, type SecretMatcher } from './secret-fields.ts';

export { CIRCULAR, SECRET_NAME_PATTERN, composedOf, redactLogSecrets, redactSecrets, secret, secretKeysOf, secretMatcher, type SecretMatcher } from './secret-fields.ts';

/** Field names declared secret in the agent configuration's schema, wherever they occur in it. */
export const AGENT_CONFIG_SECRET_KEYS: readonly string[] = secretKeysOf(AgentConfig);

/**
 * Field names the plugins declare `secret()` in their config schemas (`options` of an
 * integration). The server imports no plugin; apps/agent's registry test fails when a plugin
 * declares a secret missing here, so this stays the union of every plugin's declarations.
 */
export const PLUGIN_SECRET_KEYS: readonly string[] = ['api_token', 'cdn_waf_x_auth_key', 'private_key_passphrase', 'ssh_password'];

/** Every secret name: the platform's own and every plugin's. */
export const SECRET_KEYS: readonly string[] = [...new Set([...AGENT_CONFIG_SECRET_KEYS, ...PLUGIN_SECRET_KEYS])].sort();

/**
 * The one decision "is this field a secret", for masking settings documents, writing masks back
 * and redacting logs: a name of SECRET_KEYS in any case, or named like a secret (SECRET_NAME_PATTERN)
 * anywhere, unknown integration labels and fields included.
 */
export const isSecretName: SecretMatcher = secretMatcher(SECRET_KEYS);

/** Headers whose values are credentials, redacted from logs at any depth. */
export const CREDENTIAL_HEADERS: readonly string[] = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key'];

/** What the logs redact: every secret name and every credential header. */
export const isLogSecret: SecretMatcher = secretMatcher([...SECRET_KEYS, ...CREDENTIAL_HEADERS]);

const matcherOf = (keys: readonly string[] | SecretMatcher): SecretMatcher => (typeof keys === 'function' ? keys : secretMatcher(keys));

/** A copy of `doc` with every set secret replaced by the mask, at any depth. */
export function maskSecrets<T>(doc: T, secretKeys: readonly string[] | SecretMatcher = isSecretName): T {
  return redactSecrets(doc, matcherOf(secretKeys), SECRET_MASK);
}

function merge(incoming: unknown, stored: unknown, keys: SecretMatcher): unknown {
  if (Array.isArray(incoming)) {
    return incoming.map((item, index) => merge(item, Array.isArray(stored) ? stored[index] : undefined, keys));
  }
  if (!isPlainObject(incoming)) return incoming;
  const prior = isPlainObject(stored) ? stored : {};
  const entries: [string, unknown][] = [];
  for (const [key, item] of Object.entries(incoming)) {
    if (keys(key) && item === SECRET_MASK) {
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
export function mergeMaskedSecrets<T>(incoming: T, stored: unknown, secretKeys: readonly string[] | SecretMatcher = isSecretName): T {
  return merge(incoming, stored, matcherOf(secretKeys)) as T;
}
