/** `${NAME}` references in string values; NAME is an environment variable name. */
const REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export interface EnvProblem {
  path: string;
  message: string;
}

/**
 * Replaces `${NAME}` in every string of a JSON value with the environment's value, so secrets
 * need not sit in the file. A reference to an unset variable is a problem, not an empty string:
 * an agent must not silently start with an empty key.
 */
export function expandEnv(value: unknown, env: Record<string, string | undefined>, problems: EnvProblem[], path: string[] = []): unknown {
  if (typeof value === 'string') {
    return value.replace(REF, (_whole, name: string) => {
      const found = env[name];
      if (found === undefined) {
        problems.push({ path: path.join('.'), message: `environment variable ${name} is not set` });
        return '';
      }
      return found;
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => expandEnv(item, env, problems, [...path, String(i)]));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandEnv(v, env, problems, [...path, k])]));
  }
  return value;
}
