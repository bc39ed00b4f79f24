import { ClientApiError, RampartClient } from '@rampart/client';
import { AgentConfig } from '@rampart/contracts';
import type { AgentFileConfig } from '../config/load.ts';
import { saveCredentials } from '../runtime/credentials.ts';

export interface RegisterOptions {
  /** An organization admin's API key. */
  adminKey: string;
  tokenTtlDays?: number;
  /** Issue a key even when the agent was registered before (409). */
  issueToken: boolean;
}

/**
 * `POST /agents` with the file's section 2.11 document, then an agent key for it, saved in the
 * state directory (0600) for `run`. Returns lines to print.
 */
export async function registerAgent(file: AgentFileConfig, options: RegisterOptions, log: (line: string) => void): Promise<void> {
  const client = new RampartClient({ baseUrl: file.controlPlaneUrl, apiKey: options.adminKey, retries: 2 });
  const { running: _running, ...document } = file.settings;
  const body = AgentConfig.parse({ ...document, api_jwt_key: null });
  try {
    const answer = await client.registerAgent(body);
    log(`registered ${answer.agent_id}: ${answer.message}`);
  } catch (err) {
    if (!(err instanceof ClientApiError && err.status === 409)) throw err;
    log(`${body.gaid} is already registered`);
  }
  if (!options.issueToken) return;
  const issued = await client.issueAgentToken(body.gaid, options.tokenTtlDays ? { ttl_days: options.tokenTtlDays } : {});
  await saveCredentials(file.local.state_dir, { gaid: issued.gaid, token: issued.token, header: issued.header });
  log(`agent key ${issued.token_id} saved to ${file.local.state_dir}/credentials.json (send in header ${issued.header})`);
}
