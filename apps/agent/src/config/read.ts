import { readFile } from 'node:fs/promises';
import { parseAgentFile, type AgentFileConfig, type ConfigProblem } from './load.ts';
import { planPlugins } from './plugins.ts';
import type { Registry } from '../registry.ts';

/** Reads and fully validates a config file: schema, env references and every active plugin's entry. */
export async function readAgentConfig(
  path: string,
  env: Record<string, string | undefined>,
  registry: Registry,
): Promise<{ config?: AgentFileConfig; problems: ConfigProblem[] }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    return { problems: [{ path: '', message: `cannot read ${path}: ${(err as Error).message}` }] };
  }
  return validateAgentText(text, env, registry);
}

/** Pure: no I/O. */
export function validateAgentText(text: string, env: Record<string, string | undefined>, registry: Registry): { config?: AgentFileConfig; problems: ConfigProblem[] } {
  const parsed = parseAgentFile(text, env);
  if (!parsed.config) return parsed;
  const { problems } = planPlugins(parsed.config.settings, registry, parsed.config.local);
  return problems.length ? { problems } : parsed;
}
