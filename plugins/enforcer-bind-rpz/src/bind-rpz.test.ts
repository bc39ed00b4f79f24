import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enforcerKinds } from '@rampart/plugin-kit';
import { enforcerConformance, kindConformance, startNamed, systemGate, waitFor, type NamedInstance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { BindRpzConfig, bindRpzEnforcer, parseWhitelist, rpzIpOwner, rpzIpZoneFormat, rpzZoneFormat, serialOf } from './index.ts';

const skip = systemGate('BIND response policy zone', { commands: ['named', 'rndc', 'dig'] });
const entry = (value: string, score = 900) => ({ value, score });

describe('enforcer-bind-rpz config', () => {
  it('parses the README sample config; defaults; names the failing field', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = BindRpzConfig.parse(JSON.parse(sample!));
    expect(parsed.domains_file).toBe('/etc/bind/rpz.rampart.zone');
    expect(parsed.options).toEqual({
      dialect: 'bind',
      zone: 'rpz.rampart',
      action: 'nxdomain',
      reload_command: 'rndc reload rpz.rampart',
      reload_timeout_seconds: 60,
      max_entries: 1_000_000,
      passthru: ['intranet.example.org'],
      ttl: 60,
    });
    expect(enforcerKinds(bindRpzEnforcer, parsed)).toEqual(['domain']);
    expect(BindRpzConfig.parse({ active: true, domains_file: '/tmp/z' }).options.action).toBe('nxdomain');
    const issues = (input: unknown) => BindRpzConfig.safeParse(input).error?.issues.map((i) => i.path.join('.'));
    expect(issues({ active: true })).toEqual(['domains_file']);
    expect(issues({ active: true, domains_file: '/tmp/z', options: { action: 'not a name!' } })).toEqual(['options.action']);
    expect(issues({ active: true, domains_file: '/tmp/z', options: { passthru: ['ok.example', 'exa mple'] } })).toEqual(['options.passthru.1']);
    expect(issues({ active: true, domains_file: '/tmp/z', domains_file_whitelist: '/tmp/z' })).toEqual(['domains_file_whitelist']);
    expect(issues({ active: true, domains_file: '/tmp/z', options: { zonefile: 'x' } })).toEqual(['options']);
  });

  it('refuses a kind other than domain, and IPv4 unless ip_triggers is set', async () => {
    const cfg = BindRpzConfig.parse({ active: true, domains_file: '/tmp/rpz.zone' });
    await expect(bindRpzEnforcer.create(cfg, { log: silent, kind: 'url' })).rejects.toThrow("bind-rpz: enforces domains only (IPv4 with options.ip_triggers), not 'url'");
    await expect(bindRpzEnforcer.create(cfg, { log: silent, kind: 'ipv4' })).rejects.toThrow("not 'ipv4'");
    expect(enforcerKinds(bindRpzEnforcer, cfg)).toEqual(['domain']);
    const withIp = BindRpzConfig.parse({ active: true, domains_file: '/tmp/rpz.zone', options: { ip_triggers: { zone: 'rpz-ip.local', file: '/tmp/rpz-ip.zone' } } });
    expect(enforcerKinds(bindRpzEnforcer, withIp)).toEqual(['domain', 'ipv4']);
    const issues = BindRpzConfig.safeParse({ active: true, domains_file: '/tmp/rpz.zone', options: { ip_triggers: { zone: 'rpz-ip.local', file: '/tmp/rpz.zone' } } }).error?.issues.map((i) => i.path.join('.'));
    expect(issues).toEqual(['options.ip_triggers.file']);
  });

  it('writes rpz-ip triggers: prefix and reversed octets, read back as canonical CIDRs', () => {
    expect(rpzIpOwner('45.77.1.0/24')).toBe('24.0.1.77.45.rpz-ip');
    expect(rpzIpOwner('203.0.113.7/32')).toBe('32.7.113.0.203.rpz-ip');
    const format = rpzIpZoneFormat({ ttl: 60, action: 'nxdomain', startSerial: 5, now: () => 1 });
    const text = format.render([entry('45.77.1.0/24'), entry('203.0.113.7/32')]);
    expect(text).toBe('$TTL 60\n@ 60 IN SOA localhost. hostmaster.localhost. 6 3600 600 86400 60\n@ 60 IN NS localhost.\n24.0.1.77.45.rpz-ip CNAME .\n32.7.113.0.203.rpz-ip CNAME .\n');
    expect(format.parse(`${text}99.1.2.3.4.rpz-ip CNAME .\nnot-a-trigger CNAME .\n`)).toEqual(['45.77.1.0/24', '203.0.113.7/32']);
  });
});

describe('the RPZ zone file', () => {
  it('writes each name and its wildcard with the action, passthru names last; the serial rises only on change', () => {
    let clock = 1_700_000_000;
    let exempt = ['ok.evil.example'];
    const format = rpzZoneFormat({ ttl: 30, action: 'nodata', passthru: () => exempt, startSerial: 1_800_000_000, now: () => clock });
    const head = (serial: number) => `$TTL 30\n@ 30 IN SOA localhost. hostmaster.localhost. ${serial} 3600 600 86400 30\n@ 30 IN NS localhost.\n`;
    const first = format.render([entry('bad.example'), entry('evil.example'), entry('ok.evil.example')]);
    expect(first).toBe(
      head(1_800_000_001) +
        'bad.example CNAME *.\n*.bad.example CNAME *.\nevil.example CNAME *.\n*.evil.example CNAME *.\nok.evil.example CNAME rpz-passthru.\n*.ok.evil.example CNAME rpz-passthru.\n',
    );
    expect(format.parse(first)).toEqual(['bad.example', 'evil.example']);
    expect(format.render([entry('bad.example'), entry('evil.example'), entry('ok.evil.example')])).toBe(first);
    exempt = [];
    clock = 1_900_000_000;
    expect(format.render([])).toBe(head(1_900_000_000));
    expect(rpzZoneFormat({ ttl: 60, action: 'drop', passthru: () => [] }).render([entry('a.example')])).toContain('\na.example CNAME rpz-drop.\n*.a.example CNAME rpz-drop.\n');
    expect(rpzZoneFormat({ ttl: 60, action: 'Garden.Example.', passthru: () => [] }).render([entry('a.example')])).toContain('\na.example CNAME garden.example.\n');
    expect(rpzZoneFormat({ ttl: 60, action: 'nxdomain', passthru: () => [] }).render([entry('a.example')])).toContain('\na.example CNAME .\n');
  });

  it('starts from the serial of the file on disk, with or without a TTL before IN', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rampart-rpz-serial-'));
    try {
      await writeFile(join(dir, 'a.zone'), '$TTL 60\n@ IN SOA ns. host. ( 2026112601 3600 600 86400 60 )\n');
      await writeFile(join(dir, 'b.zone'), '$TTL 60\n@ 60 IN SOA localhost. hostmaster.localhost. 4000000000 3600 600 86400 60\n');
      expect([serialOf(join(dir, 'a.zone')), serialOf(join(dir, 'b.zone')), serialOf(join(dir, 'none.zone'))]).toEqual([2026112601, 4000000000, 0]);
      const format = rpzZoneFormat({ ttl: 60, action: 'nxdomain', passthru: () => [], startSerial: serialOf(join(dir, 'b.zone')), now: () => 1_800_000_000 });
      expect(format.render([])).toContain(' 4000000001 ');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads a whitelist file: one name a line, comments and bad lines skipped', () => {
    expect(parseWhitelist('# allowed\nIntranet.Example.org.\n\nexa mple\nb.example # partner\nb.example\n')).toEqual(['b.example', 'intranet.example.org']);
  });
});

kindConformance('bind-rpz', 'domain', async ({ capacity }) => {
  const root = await mkdtemp(join(tmpdir(), 'rampart-rpz-'));
  const path = join(root, 'rpz.zone');
  const cfg = BindRpzConfig.parse({ active: true, domains_file: path, options: { reload_command: '', ...(capacity ? { max_entries: capacity } : {}) } });
  return {
    enforcer: await bindRpzEnforcer.create(cfg, { log: silent, kind: 'domain' }),
    disturb: () => rm(path),
    teardown: () => rm(root, { recursive: true, force: true }),
  };
});

enforcerConformance('bind-rpz ip_triggers', async ({ capacity }) => {
  const root = await mkdtemp(join(tmpdir(), 'rampart-rpz-ip-'));
  const path = join(root, 'rpz-ip.zone');
  const cfg = BindRpzConfig.parse({ active: true, domains_file: join(root, 'rpz.zone'), options: { ip_triggers: { zone: 'rpz-ip.test', file: path, reload_command: '' }, ...(capacity ? { max_entries: capacity } : {}) } });
  return {
    enforcer: await bindRpzEnforcer.create(cfg, { log: silent, kind: 'ipv4' }),
    disturb: () => rm(path),
    reopen: () => bindRpzEnforcer.create(cfg, { log: silent, kind: 'ipv4' }),
    teardown: () => rm(root, { recursive: true, force: true }),
  };
});

describe.skipIf(skip)('enforcer-bind-rpz against a real named', () => {
  let named: NamedInstance;
  const records = ['evil IN A 45.77.1.1', 'www.evil IN A 45.77.1.2', 'ok.evil IN A 45.77.1.3', 'good IN A 45.77.1.4', 'garden IN A 45.77.1.5', 'localhost IN A 127.0.0.1'];
  beforeAll(async () => {
    named = await startNamed({ zone: 'lan.test', records, rpzZone: 'rpz.test', ipZone: 'rpz-ip.test' });
  });
  afterAll(() => named?.stop());

  const config = (options: Record<string, unknown>) =>
    BindRpzConfig.parse({
      active: true,
      domains_file: named.rpzFile,
      domains_file_whitelist: join(named.dir, 'allow.txt'),
      options: { zone: 'rpz.test', reload_command: named.reloadCommand, ...options },
    });
  const answerOf = async (name: string) => {
    const { status, answers } = await named.query(name);
    return `${status} ${answers.join(',')}`.trim();
  };
  const until = (name: string, expected: string) => waitFor(async () => (await answerOf(name)) === expected, `${name} → ${expected}`);

  it('a listed domain and its sub-domains get NXDOMAIN, a whitelisted one resolves, a change reaches named after the reload', async () => {
    await writeFile(join(named.dir, 'allow.txt'), 'ok.evil.lan.test\n');
    const enforcer = await bindRpzEnforcer.create(config({}), { log: silent, kind: 'domain' });
    try {
      expect(await answerOf('evil.lan.test')).toBe('NOERROR 45.77.1.1');
      expect(await enforcer.sync([entry('evil.lan.test'), entry('Bad.Lan.Test.')])).toEqual({ enforced: 2, cut: 0 });
      await until('evil.lan.test', 'NXDOMAIN');
      expect(await answerOf('www.evil.lan.test')).toBe('NXDOMAIN');
      expect(await answerOf('ok.evil.lan.test')).toBe('NOERROR 45.77.1.3');
      expect(await answerOf('good.lan.test')).toBe('NOERROR 45.77.1.4');
      expect(await enforcer.list()).toEqual(['bad.lan.test', 'evil.lan.test']);

      expect(await enforcer.apply({ add: [entry('good.lan.test')], remove: ['evil.lan.test'] })).toEqual({ enforced: 2, cut: 0 });
      await until('good.lan.test', 'NXDOMAIN');
      expect(await answerOf('evil.lan.test')).toBe('NOERROR 45.77.1.1');
      expect(await answerOf('www.evil.lan.test')).toBe('NOERROR 45.77.1.2');

      await enforcer.withdraw();
      await until('good.lan.test', 'NOERROR 45.77.1.4');
      expect(await enforcer.list()).toEqual([]);
    } finally {
      await enforcer.close();
    }
  });

  it('a whitelist decision (allow) under a blocked parent resolves after the next sync; taking it back blocks it again', async () => {
    await writeFile(join(named.dir, 'allow.txt'), '');
    const enforcer = await bindRpzEnforcer.create(config({}), { log: silent, kind: 'domain' });
    try {
      await enforcer.sync([entry('evil.lan.test')]);
      await until('ok.evil.lan.test', 'NXDOMAIN');
      enforcer.allow!(['OK.evil.lan.test.', 'not a name']);
      await enforcer.sync([entry('evil.lan.test')]);
      await until('ok.evil.lan.test', 'NOERROR 45.77.1.3');
      expect(await answerOf('www.evil.lan.test')).toBe('NXDOMAIN');
      // Passthru rules are not enforced entries.
      expect(await enforcer.list()).toEqual(['evil.lan.test']);
      enforcer.allow!([]);
      await enforcer.sync([entry('evil.lan.test')]);
      await until('ok.evil.lan.test', 'NXDOMAIN');
      await enforcer.withdraw();
    } finally {
      await enforcer.close();
    }
  });

  it('rpz-ip triggers: a name that resolves into a blocked address or network gets NXDOMAIN, whatever its name', async () => {
    await writeFile(join(named.dir, 'allow.txt'), '');
    const cfg = config({ ip_triggers: { zone: 'rpz-ip.test', file: named.ipZone!.file, reload_command: named.ipZone!.reloadCommand } });
    const ips = await bindRpzEnforcer.create(cfg, { log: silent, kind: 'ipv4' });
    try {
      expect(await ips.sync([entry('45.77.1.4/32'), entry('45.77.1.0/31')])).toEqual({ enforced: 2, cut: 0 });
      await until('good.lan.test', 'NXDOMAIN');
      expect(await answerOf('evil.lan.test')).toBe('NXDOMAIN');
      expect(await answerOf('ok.evil.lan.test')).toBe('NOERROR 45.77.1.3');
      expect(await ips.list()).toEqual(['45.77.1.0/31', '45.77.1.4/32']);
      await ips.apply({ add: [], remove: ['45.77.1.4/32'] });
      await until('good.lan.test', 'NOERROR 45.77.1.4');
      await ips.withdraw();
      await until('evil.lan.test', 'NOERROR 45.77.1.1');
    } finally {
      await ips.close();
    }
  });

  it('the action answers: NODATA, and a walled garden resolves to its own address', async () => {
    await writeFile(join(named.dir, 'allow.txt'), '');
    const nodata = await bindRpzEnforcer.create(config({ action: 'nodata' }), { log: silent, kind: 'domain' });
    await nodata.sync([entry('evil.lan.test')]);
    await until('evil.lan.test', 'NOERROR');
    await nodata.close();
    const garden = await bindRpzEnforcer.create(config({ action: 'garden.lan.test' }), { log: silent, kind: 'domain' });
    try {
      await garden.sync([entry('evil.lan.test')]);
      await until('www.evil.lan.test', 'NOERROR 45.77.1.5');
      expect(await answerOf('evil.lan.test')).toBe('NOERROR 45.77.1.5');
      await garden.withdraw();
      await until('evil.lan.test', 'NOERROR 45.77.1.1');
    } finally {
      await garden.close();
    }
  });

  it('a zone of 100,000 names loads; the last name written answers NXDOMAIN', async () => {
    await writeFile(join(named.dir, 'allow.txt'), '');
    const enforcer = await bindRpzEnforcer.create(config({}), { log: silent, kind: 'domain' });
    try {
      const many = Array.from({ length: 99_999 }, (_, i) => entry(`host-${i}.bulk.example`, 100 + (i % 900)));
      expect(await enforcer.sync([...many, entry('evil.lan.test')])).toEqual({ enforced: 100_000, cut: 0 });
      await until('www.evil.lan.test', 'NXDOMAIN');
      expect((await enforcer.list()).length).toBe(100_000);
      await enforcer.withdraw();
      await until('www.evil.lan.test', 'NOERROR 45.77.1.2');
    } finally {
      await enforcer.close();
    }
  }, 60_000);

  it('a reload command that fails is reported and the previous zone file is put back', async () => {
    const enforcer = await bindRpzEnforcer.create(config({ reload_command: `${named.reloadCommand} && false` }), { log: silent, kind: 'domain' });
    const before = await readFile(named.rpzFile, 'utf8');
    try {
      await expect(enforcer.sync([entry('evil.lan.test')])).rejects.toThrow();
      expect(await readFile(named.rpzFile, 'utf8')).toBe(before);
    } finally {
      await enforcer.close();
    }
  });
});
