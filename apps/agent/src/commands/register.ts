import { ClientApiError, RampartClient } from '@rampart/client';
import { AgentConfig } from '@rampart/contracts';
import type { AgentFileConfig } from '../config/load.ts';
import { loadCredentials, saveCredentials, type Credentials } from '../runtime/credentials.ts';

export interface RegisterOptions {
  /** An organization admin's API key. */
  adminKey: string;
  tokenTtlDays?: number;
  /** Issue a key even when the agent was registered before (409). */
  issueToken: boolean;
  /** Issue a new key even when one is live, and revoke every other live key of the agent. */
  rotate?: boolean;
}

/** `register` refused to leave a second live key beside one it cannot see (exit code 3). */
export class LiveKeysError extends Error {
  constructor(
    readonly gaid: string,
    readonly tokenIds: string[],
  ) {
    super(
      `${gaid} already has ${tokenIds.length === 1 ? 'a live agent key' : `${tokenIds.length} live agent keys`} (${tokenIds.join(', ')}) that this host does not hold: ` +
        'not issuing another. Run `register --rotate` to issue a new key and revoke those, or revoke them first (DELETE /agents/{agid}/tokens/{token_id})',
    );
  }
}

/** The token id (jti) a saved key carries: stored since `token_id` was saved, else read from the JWT payload. */
function savedTokenId(saved: Credentials): string | undefined {
  if (saved.token_id) return saved.token_id;
  try {
    const payload = JSON.parse(Buffer.from(saved.token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti?: unknown };
    return typeof payload.jti === 'string' ? payload.jti : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `POST /agents` with the file's section 2.11 document, then an agent key for it, saved in the
 * state directory (0600) for `run`. Run again, it never leaves two live keys silently: the key
 * this host holds is kept while the server still accepts it; a live key held elsewhere makes it
 * refuse (LiveKeysError) unless `rotate`, which issues a new key, saves it, and revokes the others.
 */
export async function registerAgent(file: AgentFileConfig, options: RegisterOptions, log: (line: string) => void): Promise<void> {
  const client = new RampartClient({ baseUrl: file.controlPlaneUrl, apiKey: options.adminKey, retries: 2 });
  const { running: _running, ...document } = file.settings;
  const body = AgentConfig.parse({ ...document, api_jwt_key: null });
  let known = false;
  try {
    const answer = await client.registerAgent(body);
    log(`registered ${answer.agent_id}: ${answer.message}`);
  } catch (err) {
    if (!(err instanceof ClientApiError && err.status === 409)) throw err;
    known = true;
    log(`${body.gaid} is already registered`);
  }
  if (!options.issueToken) return;
  const now = Math.floor(Date.now() / 1000);
  const live = known ? (await client.agentTokens(body.gaid)).filter((t) => !t.revoked && (t.expires_at === null || t.expires_at > now)).map((t) => t.token_id) : [];
  const saved = await loadCredentials(file.local.state_dir);
  const held = saved && saved.gaid === body.gaid ? savedTokenId(saved) : undefined;
  if (!options.rotate) {
    if (held && live.includes(held)) {
      log(`agent key ${held} in ${file.local.state_dir}/credentials.json is still valid: kept (--rotate replaces it)`);
      return;
    }
    if (live.length > 0) throw new LiveKeysError(body.gaid, live);
  }
  const issued = await client.issueAgentToken(body.gaid, options.tokenTtlDays ? { ttl_days: options.tokenTtlDays } : {});
  await saveCredentials(file.local.state_dir, { gaid: issued.gaid, token: issued.token, header: issued.header, token_id: issued.token_id });
  log(`agent key ${issued.token_id} saved to ${file.local.state_dir}/credentials.json (send in header ${issued.header})`);
  for (const old of live) {
    await client.revokeAgentToken(body.gaid, old);
    log(`revoked agent key ${old}`);
  }
}
