import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentSettingsDocument, ROLE } from '@rampart/contracts';
import { createOrganization, createUser } from '../src/services/operators/admin.ts';
import { openStore } from '../src/store/index.ts';
import { testApp } from './support/app.ts';
import { agentConfig } from './support/agents.ts';

/*
 * `rampart agent token` and `rampart agent revoke-token` as real processes on an embedded store
 * under a temporary DATA_DIR; the keys they print are then used against the server built on the
 * same store (signed with the secret kept there, as every replica would).
 */

const serverDir = fileURLToPath(new URL('..', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'rampart-agent-cli-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function rampart(...args: string[]) {
  const { DATABASE_URL: _ignored, AGENT_TOKEN_SECRET: _secret, ...rest } = process.env;
  const r = spawnSync(process.execPath, ['bin/rampart.js', ...args], { cwd: serverDir, env: { ...rest, DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('rampart agent', { timeout: 120_000 }, () => {
  it('issues a key that the server accepts, refuses non-admins, and revokes it', async () => {
    const config = agentConfig();
    let store = await openStore({ dataDir });
    const org = await createOrganization(store, { name: 'CLI agents', credits: 100 });
    await createUser(store, { orgGid: org.gid, username: 'admin@cli.example', role: ROLE.admin });
    await createUser(store, { orgGid: org.gid, username: 'reader@cli.example', role: ROLE.reader });
    expect(await store.agents.register(org.id, AgentSettingsDocument.parse(config), 'test')).toBe(true);
    await store.close();

    const refused = rampart('agent', 'token', config.gaid, '--username', 'reader@cli.example');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('rampart: only an admin of the organization issues agent keys\n');
    const unknown = rampart('agent', 'token', 'RMP-AGENT-ID-NOPE', '--username', 'admin@cli.example');
    expect(unknown.stderr).toBe('rampart: no agent RMP-AGENT-ID-NOPE in this organization\n');

    const issued = rampart('agent', 'token', config.gaid, '--username', 'admin@cli.example', '--ttl-days', '7');
    expect(issued.code, issued.stderr).toBe(0);
    const out = JSON.parse(issued.stdout) as { token: string; token_id: string; gaid: string; org: string; header: string; expires_at: string };
    expect(out).toMatchObject({ gaid: config.gaid, org: org.gid, header: 'Authorization', note: 'shown once: store it now' });
    // Times in ISO 8601 UTC, as every CLI output (issue 37).
    expect(out.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
    expect(Date.parse(out.expires_at) / 1000 - Math.floor(Date.now() / 1000)).toBeGreaterThan(7 * 86_400 - 120);

    store = await openStore({ dataDir });
    let app = await testApp(store);
    const own = await app.inject({ url: `/api/v1/agents/${config.gaid}/config`, headers: { authorization: `Bearer ${out.token}` } });
    expect(own.statusCode).toBe(200);
    expect(own.json().ips.cloud_a.secretAccessKey).toBe('aws-secret');
    await app.close();
    await store.close();

    const revoked = rampart('agent', 'revoke-token', config.gaid, out.token_id, '--username', 'admin@cli.example');
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ gaid: config.gaid, token_id: out.token_id, revoked: true });

    store = await openStore({ dataDir });
    app = await testApp(store);
    expect((await app.inject({ url: `/api/v1/agents/${config.gaid}/config`, headers: { authorization: out.token } })).statusCode).toBe(401);
    await app.close();
    await store.close();

    // Deactivation from the host: printed, then the agent's state says so; bad input names what failed.
    const second = rampart('agent', 'token', config.gaid, '--username', 'admin@cli.example');
    const key = (JSON.parse(second.stdout) as { token: string }).token;
    const deactivated = rampart('agent', 'deactivate', config.gaid, '--org', org.gid);
    expect(deactivated.code, deactivated.stderr).toBe(0);
    expect(JSON.parse(deactivated.stdout)).toEqual({ organization: org.gid, gaid: config.gaid, state: 'deactivated' });
    expect(rampart('agent', 'deactivate', 'RMP-AGENT-ID-NOPE', '--org', org.gid)).toMatchObject({ code: 1, stderr: `rampart: no agent RMP-AGENT-ID-NOPE in organization ${org.gid}\n` });
    const noOrg = rampart('agent', 'deactivate', config.gaid);
    expect(noOrg.code).toBe(1);
    expect(noOrg.stderr.split('\n')[0]).toBe("error: required option '--org <gid>' not specified");
    const listed = rampart('agent', 'list', '--org', org.gid, '--json');
    expect((JSON.parse(listed.stdout) as Array<{ gaid: string; state: string; live_keys: number }>).map((a) => [a.gaid, a.state, a.live_keys])).toEqual([[config.gaid, 'deactivated', 0]]);

    store = await openStore({ dataDir });
    app = await testApp(store);
    expect((await app.inject({ url: `/api/v1/agents/${config.gaid}/config`, headers: { authorization: key } })).statusCode).toBe(401);
    // Every change is in the audit log, as the CLI's.
    const entries = await store.operators.audit({ orgId: org.id, action: null, beforeId: null, limit: 10 });
    expect(entries.map((e) => [e.action, e.target, e.address])).toEqual([
      ['agent.deactivate', config.gaid, 'local (rampart CLI)'],
      ['agent_key.issue', config.gaid, 'local (rampart CLI)'],
      ['agent_key.revoke', config.gaid, 'local (rampart CLI)'],
      ['agent_key.issue', config.gaid, 'local (rampart CLI)'],
    ]);
    expect(entries.every((e) => e.actor.startsWith('cli:'))).toBe(true);
    await app.close();
    await store.close();
  });
});
