import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { enforcerConformance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { AwsConfig, awsEnforcer } from '../src/index.ts';
import { startAwsStandIn, type AwsStandIn } from './aws-stand-in.ts';

const ACL = 'acl-0a1b2c3d4e5f60718';
const KEY = 'AKIAIOSFODNN7EXAMPLE';

function config(aws: AwsStandIn, options: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return AwsConfig.parse({
    active: true,
    accessKeyId: KEY,
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    region: 'eu-west-1',
    ...extra,
    options: { ec2_endpoint: aws.endpoint, wafv2_endpoint: aws.endpoint, wafv2_write_interval_milliseconds: 0, ...options },
  });
}

const addresses = (n: number, offset = 0) =>
  Array.from({ length: n }, (_, i) => ({ value: `10.${((i + offset) >> 16) & 255}.${((i + offset) >> 8) & 255}.${(i + offset) & 255}/32`, score: i + offset }));

describe('enforcer-aws config', () => {
  it('parses the README sample config and names what is wrong', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = AwsConfig.parse(JSON.parse(sample!));
    expect(parsed.options.network_acl_id).toBe('acl-0a1b2c3d4e5f60718');
    expect(parsed.options.wafv2_shards).toBe(10);
    const bad = AwsConfig.safeParse({ active: true, accessKeyId: 'AKIA', options: { network_acl_id: 'sg-1' } });
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['options.network_acl_id', 'region', 'secretAccessKey']);
    expect(AwsConfig.safeParse({ active: true, region: 'eu-west-1' }).error!.issues.map((i) => i.path.join('.'))).toEqual(['options']);
  });
});

describe('enforcer-aws against a local EC2 + WAFv2 endpoint', () => {
  let aws: AwsStandIn;
  beforeAll(async () => {
    aws = await startAwsStandIn({ accessKeyId: KEY, region: 'eu-west-1', aclIds: [ACL] });
  });
  afterAll(() => aws.stop());

  it('puts the top entries in the network ACL within its quota, next to the operator rules', async () => {
    aws.state.acls.get(ACL)!.push({ ruleNumber: 10, protocol: '6', ruleAction: 'allow', egress: false, cidrBlock: '0.0.0.0/0' });
    const e = await awsEnforcer.create(config(aws, { network_acl_id: ACL, nacl_max_entries: 5 }), { log: silent });
    expect(e.capacity).toBe(5);
    expect(await e.healthcheck()).toEqual({ ok: true });
    expect(await e.sync(addresses(8))).toEqual({ enforced: 5, cut: 3 });
    // Scores are 0..7: the five highest are 3..7.
    expect(aws.denies(ACL).sort()).toEqual(['10.0.0.3/32', '10.0.0.4/32', '10.0.0.5/32', '10.0.0.6/32', '10.0.0.7/32']);
    expect(aws.state.acls.get(ACL)!.find((r) => r.ruleNumber === 10)!.ruleAction).toBe('allow');
    expect(aws.state.calls.every((c) => c.accessKeyId === KEY)).toBe(true);

    const before = aws.state.calls.length;
    await e.apply({ add: [{ value: '192.0.2.0/24', score: 100 }], remove: ['10.0.0.7/32'] });
    const writes = aws.state.calls.slice(before).filter((c) => c.action !== 'DescribeNetworkAcls');
    expect(writes.map((c) => c.action)).toEqual(['ReplaceNetworkAclEntry']);
    expect(await e.list()).toEqual(['10.0.0.3/32', '10.0.0.4/32', '10.0.0.5/32', '10.0.0.6/32', '192.0.2.0/24']);
    await e.withdraw();
    expect(aws.denies(ACL)).toEqual([]);
    expect(aws.state.acls.get(ACL)!).toHaveLength(1);
    await e.close();
  });

  it('never exceeds the ACL quota while it converges (replace, then create, then delete)', async () => {
    const acl = aws.state.acls.get(ACL)!;
    acl.length = 0;
    for (let n = 1; n <= 16; n++) acl.push({ ruleNumber: n, protocol: '6', ruleAction: 'allow', egress: false, cidrBlock: `192.0.2.${n}/32` });
    // Rule 200 is free; 201-204 hold entries that must go: the ACL is at its quota of 20.
    for (let n = 201; n <= 204; n++) acl.push({ ruleNumber: n, protocol: '-1', ruleAction: 'deny', egress: false, cidrBlock: `198.51.100.${n - 200}/32` });
    const e = await awsEnforcer.create(config(aws, { network_acl_id: ACL, nacl_first_rule: 200, nacl_max_entries: 5 }), { log: silent });
    await e.sync([{ value: '203.0.113.9/32', score: 1 }]);
    expect(aws.denies(ACL)).toEqual(['203.0.113.9/32']);
    expect(acl.find((r) => r.cidrBlock === '203.0.113.9/32')!.ruleNumber).toBe(201);
    expect(acl).toHaveLength(17);
    acl.length = 0;
    await e.close();
  });

  it('shards a large list over WAFv2 IP sets of 10,000 and rewrites only the touched set', async () => {
    const e = await awsEnforcer.create(config(aws, { wafv2_scope: 'REGIONAL', wafv2_shards: 3, wafv2_ip_set_prefix: 'big' }), { log: silent });
    expect(e.capacity).toBe(30_000);
    const list = addresses(25_000);
    expect(await e.sync(list)).toEqual({ enforced: 25_000, cut: 0 });
    const sets = [...aws.state.ipSets.values()].filter((s) => s.name.startsWith('big-')).sort((a, b) => a.name.localeCompare(b.name));
    expect(sets.map((s) => [s.name, s.addresses.length])).toEqual([
      ['big-0', 10_000],
      ['big-1', 10_000],
      ['big-2', 5_000],
    ]);
    const before = aws.state.calls.length;
    await e.apply({ add: [{ value: '198.51.100.0/24', score: 1 }], remove: ['10.0.0.1/32'] });
    const writes = aws.state.calls.slice(before).filter((c) => c.action === 'UpdateIPSet' || c.action === 'CreateIPSet');
    expect(writes).toHaveLength(1);
    expect(sets[0]!.addresses).toContain('198.51.100.0/24');
    expect(sets[0]!.addresses).not.toContain('10.0.0.1/32');
    expect((await e.list()).length).toBe(25_000);
    await e.withdraw();
    expect(aws.ipSetAddresses('big')).toEqual([]);
  });

  it('an entry lost from the network ACL is drift even while WAFv2 still holds it', async () => {
    aws.state.acls.set(ACL, []);
    const e = await awsEnforcer.create(
      config(aws, { network_acl_id: ACL, nacl_max_entries: 2, wafv2_scope: 'REGIONAL', wafv2_shards: 1, wafv2_ip_set_prefix: 'both' }),
      { log: silent },
    );
    expect(await e.sync(addresses(4))).toEqual({ enforced: 4, cut: 0 });
    expect(aws.denies(ACL).sort()).toEqual(['10.0.0.2/32', '10.0.0.3/32']);
    expect(await e.reconcile!()).toEqual({ enforced: 4, cut: 0, drifted: false });
    aws.state.acls.set(ACL, aws.state.acls.get(ACL)!.filter((r) => r.cidrBlock !== '10.0.0.3/32'));
    // list() is the union of both layers: unchanged. The read-back per layer is not.
    expect(await e.list()).toEqual(['10.0.0.0/32', '10.0.0.1/32', '10.0.0.2/32', '10.0.0.3/32']);
    expect(await e.reconcile!()).toEqual({ enforced: 4, cut: 0, drifted: true });
    expect(aws.denies(ACL).sort()).toEqual(['10.0.0.2/32', '10.0.0.3/32']);
    await e.withdraw();
    await e.close();
  });

  it('re-reads a stale lock token once and writes again', async () => {
    const start = aws.state.calls.length;
    const e = await awsEnforcer.create(
      config(aws, { wafv2_scope: 'REGIONAL', wafv2_shards: 2, wafv2_ip_set_prefix: 'slow' }),
      { log: silent },
    );
    await e.sync(addresses(3));
    // Someone else updates the set between our read and our write: our lock token goes stale.
    aws.state.bumpLockAfterGet = 'slow-0';
    await e.apply({ add: [{ value: '192.0.2.1/32', score: 1 }], remove: [] });
    expect(aws.ipSetAddresses('slow')).toEqual(['10.0.0.0/32', '10.0.0.1/32', '10.0.0.2/32', '192.0.2.1/32']);
    const writes = aws.state.calls.slice(start).filter((c) => /^(Create|Update)IPSet$/.test(c.action));
    expect(writes.map((w) => w.action)).toEqual(['CreateIPSet', 'CreateIPSet', 'UpdateIPSet', 'UpdateIPSet', 'UpdateIPSet']);
    expect(aws.state.staleWrites).toBe(1);
    await e.close();
  });

  it('uses the default credential chain when no keys are configured', async () => {
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    process.env.AWS_ACCESS_KEY_ID = KEY;
    process.env.AWS_SECRET_ACCESS_KEY = 'from-the-environment';
    try {
      const e = await awsEnforcer.create(config(aws, { network_acl_id: ACL }, { accessKeyId: '', secretAccessKey: '' }), { log: silent });
      expect(await e.healthcheck()).toEqual({ ok: true });
      await e.close();
    } finally {
      if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
      else process.env.AWS_ACCESS_KEY_ID = saved.id;
      if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
      else process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
    }
    const wrong = await awsEnforcer.create(config(aws, { network_acl_id: ACL }, { accessKeyId: 'AKIAWRONG', secretAccessKey: 'x' }), { log: silent });
    expect((await wrong.healthcheck()).detail).toContain('AWS was not able to validate');
    await wrong.close();
  });
});

// Both layers; the capacity test runs the ACL layer alone, whose quota is the capacity.
enforcerConformance('aws (local EC2 + WAFv2 endpoint)', async ({ capacity }) => {
  const aws = await startAwsStandIn({ accessKeyId: KEY, region: 'eu-west-1', aclIds: [ACL] });
  const options = capacity ? { network_acl_id: ACL, nacl_max_entries: capacity } : { network_acl_id: ACL, wafv2_scope: 'REGIONAL', wafv2_shards: 1 };
  const open = () => awsEnforcer.create(config(aws, options), { log: silent });
  return {
    enforcer: await open(),
    reopen: open,
    disturb: async () => {
      aws.state.acls.set(ACL, []);
      for (const s of aws.state.ipSets.values()) s.addresses = [];
    },
    teardown: () => aws.stop(),
  };
});
