import type { Organization, UserRow } from '../store/index.ts';

/**
 * Who is calling. `user`: an API key. `agent`: an agent key (JWT) — then `user` is the admin
 * who issued it with the role capped at contributor (reports are attributed to that user),
 * and `agent` names the agent.
 */
export interface Principal {
  kind: 'user' | 'agent';
  keyId: string;
  user: UserRow;
  org: Organization;
  agent?: AgentIdentity;
}

/** The agent an agent key belongs to. */
export interface AgentIdentity {
  /** agents.id */
  id: number;
  gaid: string;
  /** The token's jti. */
  tokenId: string;
  /** Header the agent must send its key in (its `auth_name`, lower-case). */
  header: string;
}
