import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_CSV_COLUMNS, AuditEntry, AuditListResponse, DecisionListResponse, MAX_DECISION_REASON, ROLE } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { createApiKey, createUser } from '../src/services/operators/admin.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { registerAgent } from './support/agents.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/*
 * Issue 37 item 1: every change is in the audit log with who (user, key, agent or CLI), which
 * organization, from which address and when; decisions keep their reason and who set them.
 * Organization admins read their own organization's entries, operators every entry; the log
 * filters by action, actor, organization and time, pages, and exports as CSV and JSON.
 */

const SHA256 = 'AB'.repeat(32);
const ADDRESS = '198.51.100.7';

describe.each(driverCases())('the change audit on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let globex: TestOrg;
  let operatorKey: string;
  let gaid: string;
  const user = (org: TestOrg, role: 'reader' | 'contributor' | 'admin') => `${role}.${org.org.gid.slice(-8).toLowerCase()}@example.org`;

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, key: string, payload?: object) =>
    app.inject({ method, url: `/api/v1${url}`, headers: { authorization: key }, remoteAddress: ADDRESS, ...(payload ? { payload } : {}) });
  const ok = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, key: string, payload?: object, status = 200) => {
    const res = await call(method, url, key, payload);
    expect(res.statusCode, `${method} ${url} ${res.body}`).toBe(status);
    return res;
  };
  const refusedPaths = async (method: 'GET' | 'PUT', url: string, key: string, payload?: object) => {
    const res = await call(method, url, key, payload);
    expect(res.statusCode, `${method} ${url} ${res.body}`).toBe(400);
    return (res.json() as { errors: Array<{ path: string }> }).errors.map((e) => e.path);
  };
  const audit = async (query: string, key: string) => AuditListResponse.parse((await ok('GET', `/audit?${query}`, key)).json());

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: 'Audit Acme' });
    globex = await seedOrg(store, { name: 'Audit Globex' });
    const alliance = await seedOrg(store, { name: 'Audit Alliance' });
    const username = `operator.${alliance.org.gid.slice(-8).toLowerCase()}@example.org`;
    await createUser(store, { orgGid: alliance.org.gid, username, role: ROLE.operator });
    operatorKey = (await createApiKey(store, { username })).key;

    // Acme's changes: decisions of every kind, an agent's life, its settings and the organization's.
    const ttl = Math.floor(Date.now() / 1000) + 3600;
    await ok('PUT', '/ips/45.77.40.0%2F24', acme.keys.contributor, { decision: 1, ttl, reason: 'brute force on ssh' });
    await ok('PUT', '/domains/Evil.Example.com', acme.keys.contributor, { decision: 0, reason: '=HYPERLINK("x")' });
    await ok('PUT', `/files/${SHA256.toLowerCase()}`, acme.keys.admin, { decision: '1' });
    await ok('PUT', '/urls/http%3A%2F%2Fbad.example.net%2Fx', acme.keys.contributor, { decision: -1 });
    await ok('POST', '/ips', acme.keys.contributor, { ip: '45.77.41.9', confidence: 0.5, source: 'ssh', decision: 1 }, 201);
    const agent = await registerAgent(app, acme.keys.admin, { score_threshold: 300 });
    gaid = agent.gaid;
    const doc = (await ok('GET', `/agents/${gaid}/config`, acme.keys.admin)).json() as Record<string, unknown>;
    await ok('PUT', `/agents/${gaid}/config`, acme.keys.admin, { ...doc, score_threshold: 400 });
    await ok('DELETE', `/agents/${gaid}/tokens/${agent.tokenId}`, acme.keys.admin);
    await ok('DELETE', `/agents/${gaid}`, acme.keys.admin);
    await ok('PUT', '/organization/config', acme.keys.admin, { reserved_ips: ['203.0.113.0/24'] });
    // Globex's one change.
    await ok('PUT', '/ips/45.77.50.1', globex.keys.contributor, { decision: 0, reason: 'our partner' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('shows each decision with its reason and who set it', async () => {
    const listed = DecisionListResponse.parse((await ok('GET', '/decisions', acme.keys.reader)).json());
    const byValue = Object.fromEntries(listed.items.map((d) => [d.value, [d.decision, d.reason, d.set_by]]));
    expect(byValue).toEqual({
      '45.77.41.9': [1, null, user(acme, 'contributor')],
      [SHA256]: [1, null, user(acme, 'admin')],
      'evil.example.com': [0, '=HYPERLINK("x")', user(acme, 'contributor')],
      '45.77.40.0/24': [1, 'brute force on ssh', user(acme, 'contributor')],
    });
    const theirs = DecisionListResponse.parse((await ok('GET', '/decisions', globex.keys.reader)).json());
    expect(theirs.items.map((d) => [d.value, d.reason, d.set_by])).toEqual([['45.77.50.1', 'our partner', user(globex, 'contributor')]]);
  });

  it("records every change of the organization, with actor, key, address and time, for its admins only", async () => {
    const mine = await audit('page_size=100', acme.keys.admin);
    const rows = mine.items.map((e) => [e.action, e.target, e.actor, e.organization, e.address]);
    const a = user(acme, 'admin');
    const c = user(acme, 'contributor');
    const org = acme.org.gid;
    expect(rows).toEqual([
      ['organization.settings', '', a, org, ADDRESS],
      ['agent.deactivate', gaid, a, org, ADDRESS],
      ['agent_key.revoke', gaid, a, org, ADDRESS],
      ['agent.configure', gaid, a, org, ADDRESS],
      // Registered and given its key by the test helper, which calls from the default address.
      ['agent_key.issue', gaid, a, org, '127.0.0.1'],
      ['agent.register', gaid, a, org, '127.0.0.1'],
      ['decision.set', 'ipv4:45.77.41.9', c, org, ADDRESS],
      ['decision.clear', 'url:http://bad.example.net/x', c, org, ADDRESS],
      ['decision.set', `file:${SHA256}`, a, org, ADDRESS],
      ['decision.set', 'domain:evil.example.com', c, org, ADDRESS],
      ['decision.set', 'ipv4:45.77.40.0/24', c, org, ADDRESS],
    ]);
    const [settings, , , configure, , register, reported, , , , ipv4] = mine.items;
    expect(settings!.detail).toEqual({ version: 1, changed_fields: ['reserved_ips'] });
    expect(configure!.detail).toEqual({ version: 2, changed_fields: ['score_threshold'] });
    expect(register!.detail).toEqual({ gaid, score_threshold: 300, sync_time: 5 });
    expect(reported!.detail).toEqual({ kind: 'ipv4', value: '45.77.41.9', decision: 1, ttl: null, reason: null, reported: true });
    expect(ipv4!.detail).toMatchObject({ kind: 'ipv4', value: '45.77.40.0/24', decision: 1, reason: 'brute force on ssh' });
    expect(ipv4!.detail.ttl).toBeTypeOf('number');
    // The key each change was made with.
    const keys = Object.fromEntries((await store.keys.listForOrg(acme.org.id)).map((k) => [k.username, k.key_id]));
    expect(ipv4!.actor_key).toBe(keys[c]);
    expect(settings!.actor_key).toBe(keys[a]);
    for (const e of mine.items) expect(Date.parse(e.at), e.action).toBeGreaterThan(Date.now() - 600_000);

    // Globex sees only its own; naming Acme is refused.
    expect((await audit('', globex.keys.admin)).items.map((e) => [e.action, e.target, e.detail.reason])).toEqual([['decision.set', 'ipv4:45.77.50.1', 'our partner']]);
    const forbidden = await call('GET', `/audit?organization=${acme.org.gid}`, globex.keys.admin);
    expect(forbidden.statusCode).toBe(403);
    expect((await call('GET', '/audit', acme.keys.contributor)).statusCode).toBe(403);
  });

  it('filters by action (exact or prefix), actor, organization and time, and pages', async () => {
    const everyone = await audit('page_size=500', operatorKey);
    expect(new Set(everyone.items.map((e) => e.organization))).toEqual(new Set([acme.org.gid, globex.org.gid]));
    const decisions = await audit('action=decision.&page_size=500', operatorKey);
    expect(decisions.items.map((e) => e.target)).toEqual(['ipv4:45.77.50.1', 'ipv4:45.77.41.9', 'url:http://bad.example.net/x', `file:${SHA256}`, 'domain:evil.example.com', 'ipv4:45.77.40.0/24']);
    expect((await audit('action=decision.clear', operatorKey)).items.map((e) => e.target)).toEqual(['url:http://bad.example.net/x']);
    expect((await audit('action=decision', operatorKey)).items).toEqual([]);
    const byActor = await audit(`actor=${encodeURIComponent(user(acme, 'admin'))}&action=decision.`, operatorKey);
    expect(byActor.items.map((e) => e.target)).toEqual([`file:${SHA256}`]);
    expect((await audit(`organization=${globex.org.gid}`, operatorKey)).items.map((e) => e.target)).toEqual(['ipv4:45.77.50.1']);

    // Time: move Acme's first decision an hour back; since/until split around it.
    const first = decisions.items.at(-1)!;
    await sqlOf(store).query(`update audit_log set at = at - interval '1 hour' where id = $1`, [first.id]);
    const cut = new Date(Date.now() - 1_800_000).toISOString();
    expect((await audit(`until=${cut}`, operatorKey)).items.map((e) => e.id)).toEqual([first.id]);
    const since = await audit(`since=${encodeURIComponent(cut.replace('Z', '+00:00'))}&organization=${acme.org.gid}&page_size=500`, operatorKey);
    expect(since.items.map((e) => e.id)).not.toContain(first.id);
    expect(since.items).toHaveLength(10);

    // Pages chain with the same filters, nothing twice, nothing left out.
    const seen: number[] = [];
    let page: string | null = null;
    do {
      const res: AuditListResponse = await audit(`action=decision.&page_size=4${page ? `&page=${encodeURIComponent(page)}` : ''}`, operatorKey);
      seen.push(...res.items.map((e) => e.id));
      page = res.next_page;
    } while (page);
    expect(seen).toEqual(decisions.items.map((e) => e.id));
  });

  it('exports the same entries as JSON and CSV, spreadsheet-safe', async () => {
    const listed = await audit('page_size=500', acme.keys.admin);
    const json = await ok('GET', '/audit/export', acme.keys.admin);
    expect(json.headers['content-disposition']).toBe('attachment; filename="rampart-audit.json"');
    expect((json.json() as unknown[]).map((e) => AuditEntry.parse(e))).toEqual(listed.items);

    const csv = await ok('GET', '/audit/export?format=csv&action=decision.', acme.keys.admin);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe('attachment; filename="rampart-audit.csv"');
    const lines = csv.body.split('\r\n');
    expect(lines[0]).toBe(AUDIT_CSV_COLUMNS.join(','));
    expect(lines.at(-1)).toBe('');
    expect(lines).toHaveLength(2 + 5);
    const domain = listed.items.find((e) => e.target === 'domain:evil.example.com')!;
    // The reason that looks like a formula stays text: the detail JSON is one quoted field.
    expect(lines).toContain(
      [domain.id, domain.at, domain.actor, domain.actor_key, acme.org.gid, acme.org.gid, 'decision.set', 'domain:evil.example.com', ADDRESS, `"${JSON.stringify(domain.detail).replaceAll('"', '""')}"`].join(','),
    );
    expect(csv.body).not.toMatch(/(^|,)=/m);
    // An admin exports only its own organization.
    expect((await call('GET', `/audit/export?organization=${globex.org.gid}`, acme.keys.admin)).statusCode).toBe(403);
  });

  it('refuses bad input with a 400 naming the field', async () => {
    expect(await refusedPaths('GET', '/audit?since=yesterday', acme.keys.admin)).toEqual(['querystring.since']);
    expect(await refusedPaths('GET', '/audit?until=2026-13-01T00:00:00Z', acme.keys.admin)).toEqual(['querystring.until']);
    expect(await refusedPaths('GET', '/audit?since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z', acme.keys.admin)).toEqual(['querystring.until']);
    expect(await refusedPaths('GET', '/audit/export?format=xml', acme.keys.admin)).toEqual(['querystring.format']);
    expect(await refusedPaths('GET', `/audit?actor=${'x'.repeat(201)}`, acme.keys.admin)).toEqual(['querystring.actor']);
    expect(await refusedPaths('PUT', '/ips/45.77.40.7', acme.keys.contributor, { decision: 1, reason: 'x'.repeat(MAX_DECISION_REASON + 1) })).toEqual(['body.reason']);
    expect(await refusedPaths('PUT', '/domains/ok.example.com', acme.keys.contributor, { decision: 1, reason: 42 })).toEqual(['body.reason']);
    // Nothing refused reached the log.
    expect((await audit('action=decision.&page_size=500', acme.keys.admin)).items).toHaveLength(5);
  });
});
