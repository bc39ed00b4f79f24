import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORTED_PLUGIN_NAMES } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { registerAgent } from './support/agents.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/**
 * The original vendor's agent keeps its integrations under its own product keys and posts its
 * feedback under them (decisions.md, Compatibility): such a key of the agent's registered
 * configuration is a name it may report under, stored as registered.
 */
const ORIGINAL_IPS = {
  checkpoint_securexl: { active: true, connections: '[{"host":"10.0.0.1","user":"admin","port":22}]', password: 'cp-secret', command: 'fw samp', vsids: '0' },
  pflist: { active: true, pflist_ips_txt: '/etc/pf/ips.txt', pflist_reload_command: 'pfctl -f /etc/pf.conf' },
  iptables: { active: true, acl: '/etc/iptables/acl', reload_command: '' },
  cisco: { active: false, connections: '', password: '', command: '', feeds: '', updates: '' },
  haproxy: { active: true, lb_logs: '/etc/haproxy/blocked.lst', lb_reload_command: 'systemctl reload haproxy' },
  aws: { active: false, accessKeyId: '', secretAccessKey: '', region: 'eu-west-1' },
  modsec: { active: true, ruleset: '/etc/modsecurity/rampart.conf', waf_reload_command: '' },
  cloudflare: { active: false, cloudflare_x_auth_email: '', cloudflare_x_auth_key: '' },
};
const ORIGINAL_IDS = { ssh: { active: true, ssh_log_location: '/var/log/auth.log' }, iptables: { active: true } };

describe.each(driverCases())('feedback under the labels of the agent configuration on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 100_000 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const post = (authorization: string, payload: object) => app.inject({ method: 'POST', url: '/api/v1/agents/feedback', headers: { authorization }, payload });
  const record = async (gaid: string) => {
    const listed = (await app.inject({ url: '/api/v1/agents', headers: { authorization: acme.keys.admin } })).json() as { gaid: string; enforced: Record<string, { enforced: number | null; code: unknown; score_threshold: number | null }> }[];
    return listed.find((a) => a.gaid === gaid)!;
  };

  it('takes the exact body the original client posts, under each key of its configuration, with code 0, -1 and null', async () => {
    const agent = await registerAgent(app, acme.keys.admin, { ips: ORIGINAL_IPS, ids: ORIGINAL_IDS });
    const codes = [0, -1, null];
    const labels = [...Object.keys(ORIGINAL_IPS), ...Object.keys(ORIGINAL_IDS)];
    for (const [i, plugin] of labels.entries()) {
      const blacklist = Array.from({ length: i + 1 }, (_, n) => `203.0.113.${n + 1}`);
      const body = { agid: agent.gaid, plugin, hostname: 'fw-original', code: codes[i % 3], score_threshold: 400, blacklist };
      const res = await post(agent.token, body);
      expect(res.statusCode, `${plugin}: ${res.body}`).toBe(200);
      expect(res.body).toBe('');
    }
    const enforced = (await record(agent.gaid)).enforced;
    expect(Object.keys(enforced).sort()).toEqual([...new Set(labels)].sort());
    expect(enforced.checkpoint_securexl).toMatchObject({ enforced: 1, code: 0, score_threshold: 400 });
    expect(enforced.pflist).toMatchObject({ enforced: 2, code: -1, score_threshold: 400 });
    expect(enforced.iptables).toMatchObject({ enforced: 10, code: 0, score_threshold: 400 });
    expect(enforced.cisco).toMatchObject({ enforced: 4, code: 0 });
    expect(enforced.haproxy).toMatchObject({ enforced: 5, code: -1 });
    expect(enforced.aws).toMatchObject({ enforced: 6, code: null });
  });

  it('answers 400 naming body.plugin for a label absent from that agent configuration, also one another agent has', async () => {
    const original = await registerAgent(app, acme.keys.admin, { ips: ORIGINAL_IPS, ids: ORIGINAL_IDS });
    const other = await registerAgent(app, acme.keys.admin);
    for (const [agent, plugin] of [[other, 'checkpoint_securexl'], [original, 'fortigate'], [original, 'constructor'], [original, '__proto__'], [original, '']] as const) {
      const res = await post(agent.token, { agid: agent.gaid, plugin, hostname: 'fw', code: 0, score_threshold: 400, blacklist: [] });
      expect(res.statusCode, plugin).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json().errors.map((e: { path: string }) => e.path)).toEqual(['body.plugin']);
    }
    // A user key reports for the agent it names, under that agent's labels.
    expect((await post(acme.keys.contributor, { agid: original.gaid, plugin: 'checkpoint_securexl', code: 0, blacklist: 3 })).statusCode).toBe(200);
    expect((await post(acme.keys.contributor, { agid: other.gaid, plugin: 'checkpoint_securexl', code: 0, blacklist: 3 })).statusCode).toBe(400);
    expect(Object.keys((await record(other.gaid)).enforced)).toEqual([]);
  });

  it('keeps the record bounded however many labels the configuration holds and however often they report', async () => {
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`vendor_${String(i).padStart(3, '0')}`, { active: true }]));
    const agent = await registerAgent(app, acme.keys.admin, { ips: many });
    for (const plugin of Object.keys(many)) {
      const res = await post(agent.token, { agid: agent.gaid, plugin, hostname: 'h'.repeat(255), code: 'c'.repeat(256), score_threshold: 500, blacklist: 1 });
      expect(res.statusCode, plugin).toBe(200);
    }
    for (const plugin of REPORTED_PLUGIN_NAMES) expect((await post(agent.token, { agid: agent.gaid, plugin, code: 'c'.repeat(256), blacklist: 1 })).statusCode, plugin).toBe(200);
    const listed = await record(agent.gaid);
    const names = Object.keys(listed.enforced);
    const custom = names.filter((n) => !REPORTED_PLUGIN_NAMES.includes(n)).sort();
    // 64 configured labels are kept (the newest, the one just written always among them), beside every fixed name.
    expect(custom.length).toBe(64);
    expect(custom.every((n) => Object.hasOwn(many, n))).toBe(true);
    const last = await post(agent.token, { agid: agent.gaid, plugin: 'vendor_000', code: 0, blacklist: 1 });
    expect(last.statusCode).toBe(200);
    expect(Object.keys((await record(agent.gaid)).enforced)).toContain('vendor_000');
    expect(names.length).toBe(REPORTED_PLUGIN_NAMES.length + 64);
    expect(JSON.stringify(listed).length).toBeLessThan(64 * 1024);
  });
});
