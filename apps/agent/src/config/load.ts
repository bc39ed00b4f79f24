import { AgentSettingsDocument, OrganizationConfig } from '@rampart/contracts';
import { z } from 'zod';
import { expandEnv } from './env.ts';
import { ControlPlaneUrl, LocalOptions } from './schema.ts';

export interface ConfigProblem {
  path: string;
  message: string;
}

/** What the agent runs with: the 2.11 document, where the control plane is, and host options. */
export interface AgentFileConfig {
  controlPlaneUrl: string;
  settings: AgentSettingsDocument;
  local: LocalOptions;
}

export class ConfigInvalidError extends Error {
  constructor(readonly problems: ConfigProblem[]) {
    super(`invalid agent configuration:\n  ${problems.map((p) => `${p.path || '(root)'}: ${p.message}`).join('\n  ')}`);
    this.name = 'ConfigInvalidError';
  }
}

function issues(prefix: string[], error: z.ZodError): ConfigProblem[] {
  return error.issues.map((i) => ({ path: [...prefix, ...i.path.map(String)].join('.'), message: i.message }));
}

/**
 * Parses the agent's JSON file: the section 2.11 object plus `control_plane_url` and `local`.
 * Pure (no I/O): every problem is collected, none stops the others from being found.
 */
export function parseAgentFile(text: string, env: Record<string, string | undefined>): { config?: AgentFileConfig; problems: ConfigProblem[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { problems: [{ path: '', message: `not JSON: ${(err as Error).message}` }] };
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { problems: [{ path: '', message: 'must be a JSON object' }] };
  const problems: ConfigProblem[] = [];
  const expanded = expandEnv(raw, env, problems) as Record<string, unknown>;
  const { control_plane_url: url, local: rawLocal, ...settings } = expanded;
  const local = liftOptions(settings, 'ips', 'enforcers', liftOptions(settings, 'ids', 'sources', rawLocal));

  const urlResult = ControlPlaneUrl.safeParse(url);
  if (!urlResult.success) problems.push(...issues(['control_plane_url'], urlResult.error));
  const localResult = LocalOptions.safeParse(local);
  if (!localResult.success) problems.push(...issues(['local'], localResult.error));
  const settingsResult = AgentSettingsDocument.safeParse(settings);
  if (!settingsResult.success) problems.push(...issues([], settingsResult.error));

  if (problems.length > 0 || !urlResult.success || !localResult.success || !settingsResult.success) return { problems };
  return {
    config: { controlPlaneUrl: urlResult.data.replace(/\/+$/, ''), local: localResult.data, settings: settingsResult.data },
    problems,
  };
}

/**
 * A plugin's local options may also be written inside its `ids.<label>` / `ips.<label>` entry as
 * `options` (as the plugin READMEs show). The settings document has no such field (the server's
 * copy never carries it), so they are moved to `local.sources.<label>` / `local.enforcers.<label>`;
 * an entry there wins.
 */
function liftOptions(settings: Record<string, unknown>, group: 'ids' | 'ips', into: 'sources' | 'enforcers', local: unknown): unknown {
  const entries = settings[group];
  if (entries === null || typeof entries !== 'object' || Array.isArray(entries)) return local;
  const lifted: Record<string, unknown> = {};
  const cleaned: Record<string, unknown> = {};
  for (const [label, entry] of Object.entries(entries)) {
    if (entry !== null && typeof entry === 'object' && !Array.isArray(entry) && 'options' in entry) {
      const { options, ...rest } = entry as Record<string, unknown>;
      lifted[label] = options;
      cleaned[label] = rest;
    } else cleaned[label] = entry;
  }
  if (Object.keys(lifted).length === 0) return local;
  settings[group] = cleaned;
  const base = local !== null && typeof local === 'object' && !Array.isArray(local) ? (local as Record<string, unknown>) : {};
  const existing = base[into] !== null && typeof base[into] === 'object' ? (base[into] as Record<string, unknown>) : {};
  return { ...base, [into]: { ...lifted, ...existing } };
}

export const DEFAULT_ORGANIZATION: OrganizationConfig = OrganizationConfig.parse({});
