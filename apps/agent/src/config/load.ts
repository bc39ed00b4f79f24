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
  const { control_plane_url: url, local, ...settings } = expanded;

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

export const DEFAULT_ORGANIZATION: OrganizationConfig = OrganizationConfig.parse({});
