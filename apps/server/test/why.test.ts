import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WhyResponse } from '@rampart/contracts';
import { lastSecondAtOrAbove, liveScore } from '@rampart/scoring';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { registerAgent } from './support/agents.ts';

describe.each(driverCases())('GET /why on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;
  let low: Awaited<ReturnType<typeof registerAgent>>;
  let high: Awaited<ReturnType<typeof registerAgent>>;

  const why = async (query: string, key = acme.keys.reader) => {
    const res = await app.inject({ method: 'GET', url: `/api/v1/why?${query}`, headers: { authorization: key } });
    expect(res.statusCode, res.body).toBe(200);
    return WhyResponse.parse(res.json());
  };
  const send = async (method: 'POST' | 'PUT', url: string, key: string, payload: object) => {
    const res = await app.inject({ method, url: `/api/v1${url}`, headers: { authorization: key }, payload });
    expect(res.statusCode, `${url} ${res.body}`).toBeLessThan(300);
  };

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: 'Why Acme', trust: 0.6 });
    other = await seedOrg(store, { name: 'Why Other', trust: 0.9 });
    low = await registerAgent(app, acme.keys.admin, { score_threshold: 10 });
    high = await registerAgent(app, acme.keys.admin, { score_threshold: 999 });
    // Only the low-threshold agent reports back (healthy); the other never checked in.
    await send('POST', '/agents/feedback', acme.keys.admin, { agid: low.gaid, plugin: 'packet_filter', code: 0, score_threshold: 10, blacklist: 7, state: 'ok' });
    await send('POST', '/ips', other.keys.contributor, { ip: '45.77.30.1', confidence: 0.9, source: 'ssh' });
    await send('POST', '/ips', acme.keys.contributor, { ip: '45.77.30.1', confidence: 0.5, source: 'waf' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('explains a score: the reporting organizations, and when it leaves each agent list', async () => {
    const res = await why('kind=ipv4&value=45.77.30.1');
    expect(res).toMatchObject({ kind: 'ipv4', value: '45.77.30.1', held: true, reason: 'score', decision: null, reserved_range: null, blocking_rule: null });
    expect(res.records).toHaveLength(1);
    const record = res.records[0]!;
    expect(record.value).toBe('45.77.30.1');
    const byGid = (a: unknown[], b: unknown[]) => String(a[0]).localeCompare(String(b[0]));
    expect(res.reporters.map((r) => [r.gid, r.name, r.trust, r.confidence, r.events, r.sources]).sort(byGid)).toEqual(
      [
        [acme.org.gid, 'Why Acme', 0.6, 0.5, 1, ['waf']],
        [other.org.gid, 'Why Other', 0.9, 0.9, 1, ['ssh']],
      ].sort(byGid),
    );
    expect(res.score_components).toMatchObject({ algorithm: '3.2', s0: record.score });
    const agentsByGaid = Object.fromEntries(res.agents.map((a) => [a.gaid, a]));
    expect(Object.keys(agentsByGaid).sort()).toEqual([low.gaid, high.gaid].sort());
    const live = liveScore(record.score, res.at - record.ts);
    expect(live).toBeGreaterThanOrEqual(10);
    expect(live).toBeLessThan(999);
    expect(agentsByGaid[low.gaid]).toMatchObject({ score_threshold: 10, blocked: true, reason: 'score', blocked_until: record.ts + lastSecondAtOrAbove(record.score, 10) + 1, alive: true, running: 'yes', enforcing: true });
    expect(agentsByGaid[low.gaid]!.enforcers).toEqual([
      expect.objectContaining({ name: 'packet_filter', active: true, state: 'ok', score_threshold: 10, enforced: 7, error: null }),
    ]);
    expect(agentsByGaid[high.gaid]).toMatchObject({ score_threshold: 999, blocked: false, reason: 'below_threshold', blocked_until: null, alive: false, enforcing: false });
  });

  it('names the decision that blocks, on a covering network, until its ttl, at every threshold', async () => {
    const ttl = Math.floor(Date.now() / 1000) + 7200;
    await send('PUT', '/ips/45.77.30.0%2F24', acme.keys.contributor, { decision: 1, ttl, reason: '  scanning our VPN (ticket 4711)  ' });
    const res = await why('kind=ipv4&value=45.77.30.1');
    expect(res.reason).toBe('blacklist');
    // Who set it and why (issue 37): the reason trimmed, the contributor whose key set it.
    const contributor = `contributor.${acme.org.gid.slice(-8).toLowerCase()}@example.org`;
    expect(res.decision).toEqual({ decision: 1, ttl, expired: false, on: '45.77.30.0/24', reason: 'scanning our VPN (ticket 4711)', set_by: contributor });
    expect(res.records[0]).toMatchObject({ decision: 1, ttl });
    for (const agent of res.agents) expect(agent, agent.gaid).toMatchObject({ blocked: true, reason: 'blacklist', blocked_until: ttl });
    // The other organization's view is its own: no decision, the score decides.
    const theirs = await why('kind=ipv4&value=45.77.30.1', other.keys.reader);
    expect(theirs).toMatchObject({ reason: 'score', decision: null, agents: [] });
    // And its whitelist does not change acme's.
    await send('PUT', '/ips/45.77.30.1', other.keys.contributor, { decision: 0 });
    expect((await why('kind=ipv4&value=45.77.30.1', other.keys.reader)).reason).toBe('whitelist');
    expect((await why('kind=ipv4&value=45.77.30.1')).reason).toBe('blacklist');
  });

  it('says when nothing is held, with the decision set on a value nobody reported', async () => {
    const ip = await why('kind=ipv4&value=45.77.31.9');
    expect(ip).toMatchObject({ held: false, reason: 'not_held', records: [], reporters: [], score_components: null, decision: null });
    for (const agent of ip.agents) expect(agent).toMatchObject({ blocked: false, reason: 'not_held', enforcing: false });
    // A blacklist on a value nobody reported is listed at every threshold (issue 30): "why" says
    // so, for the organization and each agent, instead of "not held, not blocked".
    await send('PUT', '/domains/never-reported.example.com', acme.keys.contributor, { decision: 1 });
    const domain = await why('kind=domain&value=Never-Reported.example.com.');
    expect(domain).toMatchObject({ kind: 'domain', value: 'never-reported.example.com', held: false, reason: 'blacklist', records: [], decision: { decision: 1, ttl: null, expired: false, on: 'never-reported.example.com' } });
    const byGaid = (a: { gaid: string }, b: { gaid: string }) => a.gaid.localeCompare(b.gaid);
    expect([...domain.agents].sort(byGaid).map((a) => [a.gaid, a.blocked, a.reason, a.blocked_until, a.enforcing, a.enforcers])).toEqual(
      [low, high].sort(byGaid).map(({ gaid }) => [gaid, true, 'blacklist', null, false, []]),
    );
    const listed = await app.inject({ method: 'GET', url: '/api/v1/domains/score/999?protocol=HTTPS', headers: { authorization: acme.keys.reader } });
    expect(listed.body.split('\n')).toContain('https://never-reported.example.com');
  });

  it('an unreported IPv4 value: a blacklist blocks at every threshold until its ttl, a whitelist does not', async () => {
    const ttl = Math.floor(Date.now() / 1000) + 3600;
    await send('PUT', '/ips/45.77.32.0%2F24', acme.keys.contributor, { decision: 1, ttl, reason: 'unreported scanner net' });
    const ip = await why('kind=ipv4&value=45.77.32.7');
    expect(ip).toMatchObject({ reason: 'blacklist', decision: { decision: 1, ttl, expired: false, on: '45.77.32.0/24', reason: 'unreported scanner net' } });
    expect(ip.agents.map((a) => [a.score_threshold, a.blocked, a.reason, a.blocked_until]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
      [10, true, 'blacklist', ttl],
      [999, true, 'blacklist', ttl],
    ]);
    // A whitelist on an unreported address: nothing to block, and it says why.
    await send('PUT', '/ips/45.77.33.7', acme.keys.contributor, { decision: 0 });
    const white = await why('kind=ipv4&value=45.77.33.7');
    expect(white).toMatchObject({ reason: 'whitelist' });
    for (const agent of white.agents) expect(agent).toMatchObject({ blocked: false, reason: 'whitelist', blocked_until: null });
  });

  it('explains a held domain, URL and file with its reporters', async () => {
    await send('POST', '/domains', other.keys.contributor, { domain: 'why.example.net', confidence: 1, tags: ['phishing'] });
    const domain = await why('kind=domain&value=why.example.net');
    expect(domain).toMatchObject({ held: true, reason: 'score', decision: null });
    expect(domain.reporters.map((r) => r.gid)).toEqual([other.org.gid]);
    await send('PUT', '/domains/why.example.net', acme.keys.contributor, { decision: 0 });
    expect((await why('kind=domain&value=why.example.net')).reason).toBe('whitelist');
    const digest = 'CD'.repeat(32);
    await send('POST', '/files', other.keys.contributor, { sha256: digest, confidence: 1, file_type: 'application/pdf' });
    await send('PUT', `/files/${digest.toLowerCase()}`, acme.keys.contributor, { decision: '1' });
    const file = await why(`kind=file&value=${digest.toLowerCase()}`);
    expect(file).toMatchObject({ held: true, reason: 'blacklist', decision: { decision: 1, on: digest } });
  });

  it('names the agents that enforce a domain, URL or digest: their enforcers of that kind', async () => {
    const edge = await registerAgent(app, acme.keys.admin, {
      score_threshold: 10,
      ips: { packet_filter: { active: true }, dns_e: { active: true, domains_file: '/etc/bind/rpz.db' }, csv: { active: true, csv_logs: '/tmp/l.csv' }, proxy_f: { active: false } },
    });
    for (const plugin of ['packet_filter', 'dns_e/domain', 'csv/url']) {
      await send('POST', '/agents/feedback', acme.keys.admin, { agid: edge.gaid, plugin, code: 0, score_threshold: 10, blacklist: 3, state: 'ok' });
    }
    await send('POST', '/domains', other.keys.contributor, { domain: 'enforced.example.net', confidence: 1 });
    await send('POST', '/urls', other.keys.contributor, { url: 'http://enforced.example.net/x', confidence: 1 });
    const names = (res: WhyResponse) => res.agents.find((a) => a.gaid === edge.gaid)!.enforcers.map((e) => [e.name, e.active, e.state, e.enforced]);
    const domain = await why('kind=domain&value=enforced.example.net');
    expect(domain.agents.find((a) => a.gaid === edge.gaid)).toMatchObject({ blocked: true, reason: 'score', enforcing: true });
    expect(names(domain)).toEqual([['dns_e/domain', true, 'ok', 3]]);
    // A low-threshold agent that enforces no domain: blocked by its list, enforced by none.
    expect(domain.agents.find((a) => a.gaid === low.gaid)).toMatchObject({ blocked: true, enforcing: false, enforcers: [] });
    const url = await why(`kind=url&value=${encodeURIComponent('http://enforced.example.net/x')}`);
    expect(names(url)).toEqual([['csv/url', true, 'ok', 3]]);
    expect(url.agents.find((a) => a.gaid === edge.gaid)!.enforcing).toBe(true);
    // IPv4 keeps its own: dns_e is not an IPv4 enforcer.
    expect(names(await why('kind=ipv4&value=45.77.30.1'))).toEqual([['csv', true, null, null], ['packet_filter', true, 'ok', 3]]);
  });

  it('is charged as a look-up', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/why?kind=ipv4&value=45.77.30.1', headers: { authorization: acme.keys.reader } });
    expect(res.headers['x-coins-cost']).toBe('1');
  });

  it('answers bad input with 400 naming the field', async () => {
    const cases: Array<[string, string]> = [
      ['kind=ipv4&value=evil.example.com', 'querystring.value'],
      ['kind=ipv4&value=45.0.0.0/4', 'querystring.value'],
      ['kind=domain&value=-bad-', 'querystring.value'],
      ['kind=url&value=javascript:alert(1)', 'querystring.value'],
      ['kind=file&value=1234', 'querystring.value'],
      ['value=45.77.30.1', 'querystring.kind'],
      ['kind=ipv4', 'querystring.value'],
      ['kind=ipv6&value=::1', 'querystring.kind'],
    ];
    for (const [query, path] of cases) {
      const res = await app.inject({ method: 'GET', url: `/api/v1/why?${query}`, headers: { authorization: acme.keys.reader } });
      expect(res.statusCode, query).toBe(400);
      expect((res.json().errors as Array<{ path: string }>).map((e) => e.path), query).toContain(path);
    }
  });
});
