import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';

/** A valid agent configuration (spec 2.11) with a few secrets set, under a fresh gaid. */
export function agentConfig(overrides: Record<string, unknown> = {}) {
  return {
    gaid: `RMP-AGENT-ID-${randomBytes(6).toString('hex').toUpperCase()}`,
    ts: 1717171717000,
    score_threshold: 500,
    start_from: 0,
    version: 'v3.2.1',
    proxy: 'CLOUD',
    sync_time: 5,
    maximum_rules: 10000,
    api_url: 'https://rampart.example.org/api/v1/ips',
    auth_name: 'Authorization',
    api_jwt_key: null,
    ids: { ssh_log: { active: true, ssh_log_location: '/var/log/auth.log' } },
    ips: {
      packet_filter: { active: true, acl: '/etc/rampart/acl.txt', reload_command: 'nft -f /etc/rampart/acl.nft' },
      router_a: { active: false, router_host: '192.0.2.1', router_user: 'admin', router_password: 'router-pass' },
      cloud_a: { active: false, accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'aws-secret', region: 'eu-west-1' },
    },
    ...overrides,
  };
}

/** Registers an agent through the API and issues it a key; returns both. */
export async function registerAgent(app: FastifyInstance, adminKey: string, overrides: Record<string, unknown> = {}) {
  const config = agentConfig(overrides);
  const res = await app.inject({ method: 'POST', url: '/api/v1/agents', headers: { authorization: adminKey }, payload: config });
  if (res.statusCode !== 201) throw new Error(`register failed: ${res.statusCode} ${res.body}`);
  const issued = await app.inject({ method: 'POST', url: `/api/v1/agents/${config.gaid}/token`, headers: { authorization: adminKey }, payload: {} });
  if (issued.statusCode !== 201) throw new Error(`token failed: ${issued.statusCode} ${issued.body}`);
  const body = issued.json() as { token: string; token_id: string; header: string };
  return { gaid: config.gaid, config, token: body.token, tokenId: body.token_id, header: body.header };
}
