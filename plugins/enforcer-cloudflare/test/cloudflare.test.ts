import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { engineStats, type Enforcer } from '@rampart/plugin-kit';
import { enforcerConformance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { CloudflareConfig, cloudflareEnforcer } from '../src/index.ts';
import { startCloudflareStandIn, type CloudflareStandIn } from './cloudflare-stand-in.ts';

const ACCOUNT = '023e105f4ecef8ad9ca31a8372d0c353';
const ZONE = '9a7806061c88ada191ed06f989cc3dac';

function config(cf: CloudflareStandIn, extra: Record<string, unknown> = {}, options: Record<string, unknown> = {}) {
  return CloudflareConfig.parse({
    active: true,
    cdn_waf_x_auth_email: 'secops@example.com',
    cdn_waf_x_auth_key: 'global-key',
    ...extra,
    options: { account_id: ACCOUNT, zone_id: ZONE, api_url: cf.url, bulk_poll_milliseconds: 10, ...options },
  });
}

describe('enforcer-cloudflare config', () => {
  it('parses the README sample config and names what is missing', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = CloudflareConfig.parse(JSON.parse(sample!));
    expect(parsed.options.max_items).toBe(10_000);
    expect(parsed.options.list_name).toBe('rampart_blocklist');
    const bad = CloudflareConfig.safeParse({
      active: true,
      options: { api_token: 't', account_id: ACCOUNT, zone_id: ZONE, max_items: 10_001, list_name: 'Bad-Name' },
    });
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['options.list_name', 'options.max_items']);
    const missing = CloudflareConfig.safeParse({ active: true });
    expect(missing.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['cdn_waf_x_auth_key', 'options.account_id', 'options.zone_id']);
  });
});

describe('enforcer-cloudflare against a local stand-in of the API', () => {
  let cf: CloudflareStandIn;
  let e: Enforcer;
  beforeAll(async () => {
    cf = await startCloudflareStandIn({ email: 'secops@example.com', key: 'global-key' });
    e = await cloudflareEnforcer.create(config(cf), { log: silent });
  });
  afterAll(() => cf.stop());

  it('fills the list with one bulk replace polled to completion and adds one custom rule', async () => {
    expect(await e.healthcheck()).toEqual({ ok: true });
    cf.state.rulesets.set(ZONE, { id: 'rs1', rules: [{ id: 'r0', description: 'someone else', expression: 'true', action: 'log', enabled: true }] });
    expect(await e.sync([{ value: '203.0.113.7/32', score: 9 }, { value: '198.51.100.0/24', score: 5 }, { value: '0.0.0.0/1', score: 1 }])).toEqual({
      enforced: 2,
      cut: 0,
      invalid: 1,
    });
    expect(cf.items('rampart_blocklist')).toEqual(['198.51.100.0/24', '203.0.113.7']);
    expect(cf.state.rulesets.get(ZONE)!.rules.map((r) => [r.description, r.expression, r.action])).toEqual([
      ['rampart block list', 'ip.src in $rampart_blocklist', 'block'],
      ['someone else', 'true', 'log'],
    ]);
    // Every bulk operation was polled until it completed (pending → running → completed).
    expect([...cf.state.ops.values()].every((op) => op.status === 'completed' && op.polls === 2)).toBe(true);
  });

  it('applies diffs as item deletes and appends, idempotently, and survives 429s', async () => {
    await e.apply({ add: [{ value: '192.0.2.0/24', score: 3 }], remove: ['203.0.113.7/32'] });
    expect(cf.items('rampart_blocklist')).toEqual(['192.0.2.0/24', '198.51.100.0/24']);
    const before = cf.state.requests.length;
    await e.apply({ add: [{ value: '192.0.2.0/24', score: 3 }], remove: ['203.0.113.7/32'] });
    // The same diff again changes nothing: no request at all.
    expect(cf.state.requests.slice(before)).toEqual([]);
    cf.state.throttle = 2;
    expect(await e.list()).toEqual(['192.0.2.0/24', '198.51.100.0/24']);
    expect(cf.state.throttle).toBe(0);
  });

  it('restores a rule someone edited and withdraws both', async () => {
    const rule = cf.state.rulesets.get(ZONE)!.rules[0]!;
    rule.action = 'log';
    // A list no rule blocks enforces nothing; reconcile restores the rule.
    expect(await e.list()).toEqual([]);
    expect(await e.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: true });
    expect(cf.state.rulesets.get(ZONE)!.rules[0]!.action).toBe('block');
    expect(await e.list()).toEqual(['192.0.2.0/24', '198.51.100.0/24']);
    await e.withdraw();
    expect(cf.items('rampart_blocklist')).toEqual([]);
    expect(cf.state.rulesets.get(ZONE)!.rules.map((r) => r.description)).toEqual(['someone else']);
  });

  it('reads nothing while its list is missing or its rule deleted or disabled; reconcile restores them', async () => {
    const options = { list_name: 'second_list', rule_description: 'second rule' };
    const e2 = await cloudflareEnforcer.create(config(cf, {}, options), { log: silent });
    const rules = () => cf.state.rulesets.get(ZONE)!.rules;
    // The rule is there, the list is not (deleted by hand): nothing is enforced.
    rules().push({ id: 'r9', description: 'second rule', expression: 'ip.src in $second_list', action: 'block', enabled: true });
    expect(await e2.list()).toEqual([]);
    await e2.sync([{ value: '203.0.113.0/24', score: 1 }]);
    expect(await e2.list()).toEqual(['203.0.113.0/24']);
    cf.state.rulesets.get(ZONE)!.rules = rules().filter((r) => r.description !== 'second rule');
    expect(await e2.list()).toEqual([]);
    expect(await e2.reconcile!()).toEqual({ enforced: 1, cut: 0, drifted: true });
    rules().find((r) => r.description === 'second rule')!.enabled = false;
    expect(await e2.reconcile!()).toEqual({ enforced: 1, cut: 0, drifted: true });
    expect(rules().filter((r) => r.description === 'second rule').map((r) => [r.expression, r.action, r.enabled])).toEqual([
      ['ip.src in $second_list', 'block', true],
    ]);
    expect(await e2.reconcile!()).toEqual({ enforced: 1, cut: 0, drifted: false });
    await e2.withdraw();
  });

  it('fails with the API error on bad credentials and on a failed bulk operation', async () => {
    const bad = await cloudflareEnforcer.create(config(cf, { cdn_waf_x_auth_key: 'wrong' }), { log: silent });
    expect(await bad.healthcheck()).toMatchObject({ ok: false });
    await expect(bad.sync([])).rejects.toMatchObject({ code: 'CLOUDFLARE_API_FAILED', status: 403 });
    const big = await cloudflareEnforcer.create(config(cf, {}, { max_items: 10_000 }), { log: silent });
    const many = Array.from({ length: 10_001 }, (_, i) => ({ value: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`, score: i }));
    // The enforcer caps at 10,000 itself, so the operation the stand-in sees fits.
    expect(await big.sync(many)).toEqual({ enforced: 10_000, cut: 1 });
    expect(cf.items('rampart_blocklist')).toHaveLength(10_000);
    expect(cf.items('rampart_blocklist')).not.toContain('10.0.0.0');
    // A batch whose bulk operation fails is followed by one full replace (the engine's fall-back).
    cf.state.failNextOp = 'exceeded maximum number of list items';
    expect(await big.apply({ add: [], remove: ['10.0.0.1/32'] })).toEqual({ enforced: 10_000, cut: 0 });
    expect(engineStats(big)).toMatchObject({ fallbacks: 1, replaces: 2 });
    expect(cf.items('rampart_blocklist')).toContain('10.0.0.0');
    expect(cf.items('rampart_blocklist')).not.toContain('10.0.0.1');
    // A full replace whose operation fails fails the call.
    cf.state.failNextOp = 'exceeded maximum number of list items';
    await expect(big.sync([])).rejects.toThrow('bulk operation failed: exceeded maximum number of list items');
    await big.withdraw();
  });
});

describe('enforcer-cloudflare with an API token', () => {
  it('sends the bearer token', async () => {
    const cf = await startCloudflareStandIn({ token: 'tok-1' });
    try {
      const e = await cloudflareEnforcer.create(config(cf, { cdn_waf_x_auth_email: '', cdn_waf_x_auth_key: '' }, { api_token: 'tok-1' }), { log: silent });
      await e.sync([{ value: '203.0.113.0/24', score: 1 }]);
      expect(cf.items('rampart_blocklist')).toEqual(['203.0.113.0/24']);
    } finally {
      await cf.stop();
    }
  });
});

enforcerConformance('cloudflare (local API stand-in)', async ({ capacity }) => {
  const cf = await startCloudflareStandIn({ token: 'tok-2' });
  const open = () => cloudflareEnforcer.create(config(cf, {}, { api_token: 'tok-2', ...(capacity ? { max_items: capacity } : {}) }), { log: silent });
  return {
    enforcer: await open(),
    reopen: open,
    disturb: async () => {
      for (const list of cf.state.lists.values()) list.items = [];
    },
    teardown: () => cf.stop(),
  };
});
