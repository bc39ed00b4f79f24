import { InvalidArgumentError, type Command } from 'commander';
import { ApiError } from '@rampart/contracts';
import { loadConfig } from '../config.ts';
import { agentTokenCodec, agentTokenSecret, issueAgentToken } from '../services/agents/tokens.ts';
import { audit, cliActor } from '../services/operators/audit.ts';
import { eventBus } from '../services/events.ts';
import { openStore, type Store } from '../store/index.ts';

/*
 * `rampart agent token|revoke-token`: agent keys from the command line, signed with
 * the same secret as every server replica (AGENT_TOKEN_SECRET, else the store's).
 */

function days(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 3650) throw new InvalidArgumentError('expected whole days from 1 to 3650');
  return n;
}

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<void> {
  const config = loadConfig();
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, owner: 'cli' });
  try {
    process.stdout.write(`${JSON.stringify(await fn(store), null, 2)}\n`);
  } catch (err) {
    if (err instanceof ApiError) throw new Error(err.detail);
    throw err;
  } finally {
    await store.close();
  }
}

/** The admin acting, and their organization; refuses anyone else. */
async function adminOf(store: Store, username: string) {
  const user = await store.users.byUsername(username);
  const org = user && (await store.orgs.byId(user.org_id));
  if (!user || !org) throw new ApiError('not_found', `no user ${username}`);
  return { user, org };
}

export function registerAgentCommands(program: Command): Command {
  const agent = program.command('agent').description('manage agents and their keys');
  agent
    .command('token')
    .description("issue a key (signed JWT) for an agent of the admin's organization (printed once)")
    .argument('<gaid>', 'agent id (RMP-AGENT-ID-...)')
    .requiredOption('--username <email>', 'the organization admin issuing it')
    .option('--ttl-days <days>', 'days until it expires (default: never)', days)
    .action((gaid: string, opts: { username: string; ttlDays?: number }) =>
      withStore(async (store) => {
        const { user, org } = await adminOf(store, opts.username);
        const codec = agentTokenCodec(await agentTokenSecret(loadConfig().agentTokenSecret, store));
        const issued = await issueAgentToken(store, codec, { org, issuer: user, gaid, ttlDays: opts.ttlDays });
        await audit(store, cliActor(), { orgId: org.id, action: 'agent_key.issue', target: issued.gaid, detail: { token_id: issued.token_id, expires_at: issued.expires_at, issuer: user.username } });
        return { ...issued, expires_at: issued.expires_at === null ? null : new Date(issued.expires_at * 1000).toISOString(), note: 'shown once: store it now' };
      }),
    );
  agent
    .command('revoke-token')
    .description('revoke one key of an agent by its token id')
    .argument('<gaid>', 'agent id')
    .argument('<token_id>', 'token id (jti) printed when it was issued')
    .requiredOption('--username <email>', 'an admin of the agent organization')
    .action((gaid: string, tokenId: string, opts: { username: string }) =>
      withStore(async (store) => {
        const { org } = await adminOf(store, opts.username);
        const row = await store.agents.get(org.id, gaid);
        if (!row || !(await store.agents.revokeToken(row.id, tokenId))) throw new ApiError('not_found', `no active key ${tokenId} for agent ${gaid}`);
        await audit(store, cliActor(), { orgId: org.id, action: 'agent_key.revoke', target: gaid, detail: { token_id: tokenId } });
        // Servers on the same PostgreSQL hear this and close the agent's live connection.
        await eventBus(store.connection).publish({ type: 'agent_revoked', org_id: org.id, gaid, token_id: tokenId });
        return { gaid, token_id: tokenId, revoked: true };
      }),
    );
  return agent;
}
