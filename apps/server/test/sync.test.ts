import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrganizationConfig, SYNC_CLOSE, type AgentSummary } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { eventBus } from '../src/services/events.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { registerAgent } from './support/agents.ts';
import { connectSync, until, type SyncPeer } from './support/sync-client.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('live sync channel on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let base: string;
  let acme: TestOrg;
  const peers: SyncPeer[] = [];

  beforeAll(async () => {
    store = await driver.open();
    // One-second heartbeats so that a silent peer is dropped within the test's deadline.
    app = await testApp(store, { syncHeartbeatSeconds: 1 });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    acme = await seedOrg(store, { name: 'Acme sync' });
  });
  afterAll(async () => {
    await Promise.all(peers.map((p) => p.close()));
    await app.close();
    await store.close();
  });

  async function connect(headers: Record<string, string>, options: { autoPong?: boolean } = {}) {
    const peer = await connectSync(base, headers, options);
    peers.push(peer);
    return peer;
  }

  it('greets an agent with its settings (unmasked), the organization document and the feed cursor', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const peer = await connect({ authorization: a.token });
    const hello = await peer.next('hello');
    expect(hello).toMatchObject({ gaid: a.gaid, settings_version: 1, organization_version: 0, feed: { ipv4: 0, file: 0, domain: 0, url: 0 } });
    expect(hello.settings.ips!.router_a).toEqual({ active: false, router_host: '192.0.2.1', router_user: 'admin', router_password: 'router-pass' });
    expect(hello.organization).toEqual(OrganizationConfig.parse({}));
    // Sent without agent_defaults (the console's), which an agent built before it would refuse.
    const sent = peer.raw.find((f) => (f as { type: string }).type === 'hello') as { organization: Record<string, unknown> };
    expect(Object.keys(sent.organization).sort()).toEqual(['live', 'reserved_ips']);
    expect(Math.abs(hello.server_time - Date.now() / 1000)).toBeLessThan(60);
  });

  it('answers a plain GET (no upgrade) with a problem', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const res = await app.inject({ url: '/api/v1/agents/sync', headers: { authorization: a.token } });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toContain('WebSocket');
  });

  it('refuses user keys, unknown keys and keys in the wrong header before the upgrade', async () => {
    await expect(connectSync(base, { authorization: acme.keys.admin })).rejects.toThrow('HTTP 403');
    await expect(connectSync(base, {})).rejects.toThrow('HTTP 401');
    const a = await registerAgent(app, acme.keys.admin, { auth_name: 'X-Agent-Key' });
    await expect(connectSync(base, { authorization: a.token })).rejects.toThrow('HTTP 401');
    const ok = await connect({ 'x-agent-key': a.token });
    expect((await ok.next('hello')).gaid).toBe(a.gaid);
  });

  it('pushes the new agent document after an admin replaces it, secrets unmasked', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const peer = await connect({ authorization: a.token });
    await peer.next('hello');
    const doc = (await app.inject({ url: `/api/v1/agents/${a.gaid}/config`, headers: { authorization: acme.keys.admin } })).json();
    const put = await app.inject({
      method: 'PUT',
      url: `/api/v1/agents/${a.gaid}/config`,
      headers: { authorization: acme.keys.admin },
      payload: { ...doc, running: 'no', score_threshold: 650 },
    });
    expect(put.statusCode).toBe(200);
    const changed = await peer.next('settings_changed');
    expect(changed).toMatchObject({ subject: 'agent', version: 2, settings: { gaid: a.gaid, running: 'no', score_threshold: 650 } });
    expect(changed.settings!.ips!.router_a!.router_password).toBe('router-pass');
  });

  it("pushes the organization document to every agent of that organization only", async () => {
    const org = await seedOrg(store, { name: 'Sync org doc' });
    const [a, b] = [await registerAgent(app, org.keys.admin), await registerAgent(app, org.keys.admin)];
    const outsider = await registerAgent(app, acme.keys.admin);
    const [pa, pb, po] = [await connect({ authorization: a.token }), await connect({ authorization: b.token }), await connect({ authorization: outsider.token })];
    await Promise.all([pa.next('hello'), pb.next('hello'), po.next('hello')]);
    const document = { ...OrganizationConfig.parse({}), reserved_ips: ['192.0.2.0/24'] };
    expect((await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: org.keys.admin }, payload: document })).statusCode).toBe(200);
    for (const peer of [pa, pb]) {
      const m = await peer.next('settings_changed', (x) => x.subject === 'organization');
      expect(m).toMatchObject({ version: 1, organization: { reserved_ips: ['192.0.2.0/24'] } });
      const sent = peer.raw.find((f) => (f as { type: string; subject?: string }).type === 'settings_changed') as { organization: Record<string, unknown> };
      expect(sent.organization).not.toHaveProperty('agent_defaults');
    }
    // A later change to the outsider's own organization arrives; the earlier one never did.
    // (A real change: a save that changes nothing is no change and pushes nothing.)
    expect((await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: acme.keys.admin }, payload: { reserved_ips: ['198.51.100.77'] } })).statusCode).toBe(200);
    await po.next('settings_changed', (x) => x.subject === 'organization');
    expect(po.messages.filter((m) => m.type === 'settings_changed')).toHaveLength(1);
  });

  it('relays decision and feed changes from the event bus', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const peer = await connect({ authorization: a.token });
    await peer.next('hello');
    const bus = eventBus(sqlOf(store));
    await bus.publish({ type: 'decision_changed', org_id: acme.org.id, kind: 'domain', indicator: 'bad.example', decision: 1, ttl: null });
    await bus.publish({ type: 'decision_changed', org_id: acme.org.id + 1000, kind: 'domain', indicator: 'other.example', decision: 0, ttl: null });
    await bus.publish({ type: 'feed_changed', org_id: null, kind: 'ipv4', ts: 100 });
    await bus.publish({ type: 'feed_changed', org_id: null, kind: 'ipv4', ts: 120 });
    expect(await peer.next('decision_changed')).toEqual({ type: 'decision_changed', kind: 'domain', indicator: 'bad.example', decision: 1, ttl: null });
    // A burst of feed changes reaches the agent as one message carrying the newest ts.
    expect(await peer.next('feed_changed')).toEqual({ type: 'feed_changed', kind: 'ipv4', ts: 120 });
    expect(peer.messages.filter((m) => m.type === 'decision_changed')).toHaveLength(1);
    expect(peer.messages.filter((m) => m.type === 'feed_changed')).toHaveLength(1);
  });

  it("turns an agent's own report into feed_changed for every agent, and the next hello carries the new feed cursor", async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const peer = await connect({ authorization: a.token });
    await peer.next('hello');
    const report = await app.inject({
      method: 'POST',
      url: `/api/v1/ips?gaid=${a.gaid}`,
      headers: { authorization: a.token },
      payload: { ip: '45.77.203.77', confidence: 0.9, source: 'ssh_log', lid: 7 },
    });
    expect(report.statusCode, report.body).toBeLessThan(300);
    const changed = await peer.next('feed_changed', (m) => m.kind === 'ipv4' && m.ts > 0);
    const later = await connect({ authorization: (await registerAgent(app, acme.keys.admin)).token });
    const hello = await later.next('hello');
    expect(hello.feed!.ipv4).toBeGreaterThanOrEqual(changed.ts);
  });

  it('announces a report with feed_changed only once the feed serves it (issue 30: agents pulled before the second settled, then waited for the next change)', async () => {
    const org = await seedOrg(store, { name: 'Sync settled', credits: 1_000_000, trust: 1 });
    const a = await registerAgent(app, org.keys.admin);
    const peer = await connect({ authorization: a.token });
    const cursor = (await peer.next('hello')).feed!.ipv4;
    // Just after a second begins: the coalescing window (200 ms) then ends inside the report's second.
    while (Date.now() % 1000 > 50) await new Promise((r) => setTimeout(r, 5));
    const second = Math.floor(Date.now() / 1000);
    const report = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: org.keys.contributor }, payload: { ip: '45.77.204.9', confidence: 1, source: 'ssh_log' } });
    expect(report.statusCode, report.body).toBe(201);
    const changed = await peer.next('feed_changed', (m) => m.kind === 'ipv4' && m.ts >= second);
    const page = await app.inject({ url: `/api/v1/ips?ts=${cursor}&page_size=1000`, headers: { authorization: org.keys.reader } });
    const records = (page.json() as { body: Array<{ ip: string; ts: number }> }).body;
    expect(records.find((r) => r.ip === '45.77.204.9')?.ts).toBe(changed.ts);
  });

  it('answers agent pings, sends its own, and counts the connection and state messages as check-ins', async () => {
    const org = await seedOrg(store, { name: 'Sync checkin' });
    const a = await registerAgent(app, org.keys.admin);
    const list = async () => (await app.inject({ url: '/api/v1/agents', headers: { authorization: org.keys.admin } })).json() as AgentSummary[];
    expect((await list())[0]).toMatchObject({ alive: false, last_checkin: null });
    const peer = await connect({ authorization: a.token });
    await peer.next('hello');
    // Being connected is a check-in of its own, before the agent says anything.
    await until('the connection to count as a check-in', async () => {
      const s = (await list())[0];
      return s?.alive && s.last_checkin_via === 'sync' ? s : undefined;
    });
    peer.ws.send(JSON.stringify({ type: 'ping', nonce: 'n-1' }));
    expect(await peer.next('pong')).toEqual({ type: 'pong', nonce: 'n-1' });
    const ping = await peer.next('ping');
    peer.ws.send(JSON.stringify({ type: 'pong', nonce: ping.nonce }));
    const capabilities = { version: 'v4.0.0', enforcers: ['csv', 'packet_filter'], sources: ['ssh_log'], kinds: ['ipv4'] };
    peer.ws.send(
      JSON.stringify({
        type: 'state',
        version: 'v4.0.0',
        hostname: 'edge-1',
        enforced: 12,
        plugins: [{ plugin: 'packet_filter', enforced: 12, healthy: true, state: 'ok' }],
        capabilities,
      }),
    );

    const summary = await until('the agent to be listed alive with its state', async () => {
      const s = (await list())[0];
      return s?.alive && s.hostname === 'edge-1' ? s : undefined;
    });
    expect(summary).toMatchObject({
      version: 'v4.0.0',
      last_checkin_via: 'sync',
      enforced: { packet_filter: { enforced: 12, healthy: true, state: 'ok', error: null } },
      status: 'ok',
      capabilities,
    });
  });

  it('keeps the newest of state reports sent in a burst: it is written when the interval ends, and on disconnect', async () => {
    const org = await seedOrg(store, { name: 'Sync burst' });
    const a = await registerAgent(app, org.keys.admin);
    const list = async () => (await app.inject({ url: '/api/v1/agents', headers: { authorization: org.keys.admin } })).json() as AgentSummary[];
    const state = (plugins: unknown[]) => JSON.stringify({ type: 'state', version: 'v4.0.0', enforced: 0, plugins });
    const peer = await connect({ authorization: a.token });
    await peer.next('hello');
    peer.ws.send(state([{ plugin: 'csv', enforced: 3, healthy: true, state: 'ok' }]));
    // The refusal of a setting saved right after the hello: inside the write interval.
    peer.ws.send(state([{ plugin: 'csv', enforced: 3, healthy: true, state: 'ok' }, { plugin: 'firewall_b', enforced: 0, healthy: false, state: 'failed', error: 'refused' }]));
    const summary = await until('the second report to be written', async () => {
      const s = (await list())[0];
      return s?.enforced.firewall_b ? s : undefined;
    }, 15_000);
    expect(summary.enforced.firewall_b).toMatchObject({ state: 'failed', error: 'refused', enforced: 0 });

    // A report still waiting when the agent hangs up is written too.
    peer.ws.send(state([{ plugin: 'csv', enforced: 4, healthy: true, state: 'ok' }]));
    await peer.close();
    await until('the report sent before hanging up', async () => ((await list())[0]?.enforced.csv?.enforced === 4 ? true : undefined), 15_000);
  });

  it('drops a peer that stops answering heartbeats', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const peer = await connect({ authorization: a.token }, { autoPong: false });
    await peer.next('hello');
    await until('the silent peer to be dropped', () => peer.closed, 10_000);
    expect(peer.closed!.code).toBe(1006);
  });

  it('replaces an older connection of the same agent and closes connections of revoked keys', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const first = await connect({ authorization: a.token });
    await first.next('hello');
    const second = await connect({ authorization: a.token });
    await second.next('hello');
    await until('the first connection to close', () => first.closed);
    expect(first.closed!.code).toBe(SYNC_CLOSE.replaced);

    const del = await app.inject({ method: 'DELETE', url: `/api/v1/agents/${a.gaid}/tokens/${a.tokenId}`, headers: { authorization: acme.keys.admin } });
    expect(del.statusCode).toBe(200);
    await until('the revoked connection to close', () => second.closed);
    expect(second.closed).toEqual({ code: SYNC_CLOSE.unauthorized, reason: 'agent key revoked' });
    await expect(connectSync(base, { authorization: a.token })).rejects.toThrow('HTTP 401');
  });

  it('tells connected agents it is going away (1001) when it shuts down, so they retry at once', async () => {
    // Before issue 31, @fastify/websocket's own shutdown hook ran first and closed every socket without a code (1005).
    const other = await testApp(store, {});
    const url = await other.listen({ host: '127.0.0.1', port: 0 });
    const a = await registerAgent(other, acme.keys.admin);
    const peer = await connectSync(url, { authorization: a.token });
    await peer.next('hello');
    await other.close();
    await until('the connection to close', () => peer.closed);
    expect(peer.closed).toEqual({ code: SYNC_CLOSE.shutdown, reason: 'server shutting down' });
  });
});
