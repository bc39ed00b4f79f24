import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Enforcer } from '@rampart/plugin-kit';
import { enforcerConformance, startNginx, statusFrom, systemGate, waitFor, type NginxInstance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { ModSecurityConfig, modsecurityEnforcer } from './index.ts';

const MODULE = '/usr/share/nginx/modules/ngx_http_modsecurity_module.so';

/** Skips locally (printing why) and fails under CI when nginx or its ModSecurity module is missing. */
function gate(): boolean {
  if (systemGate('ModSecurity in nginx', { commands: ['nginx'] })) return true;
  if (existsSync(MODULE)) return false;
  if (process.env.CI) throw new Error(`ModSecurity in nginx: cannot run under CI: ${MODULE} missing`);
  console.warn(`[skip] ModSecurity in nginx: ${MODULE} missing (apt-get install libnginx-mod-http-modsecurity)`);
  return true;
}
const skip = gate();

async function readme(): Promise<string> {
  return readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
}

/** nginx with libmodsecurity running the README's rule against a data file in its directory. */
async function modsecNginx(): Promise<NginxInstance> {
  const rule = /```\n(SecRule REMOTE_ADDR[\s\S]*?)```/.exec(await readme())![1]!.replace('/etc/modsecurity/rampart-blocklist.txt', '{dir}/blocklist.txt');
  return startNginx(
    `server {
      listen 127.0.0.1:{port};
      modsecurity on;
      modsecurity_rules_file {dir}/rules.conf;
      location / { return 200 "ok\\n"; }
    }`,
    {
      main: `load_module ${MODULE};`,
      files: { 'rules.conf': `SecRuleEngine On\n${rule}`, 'blocklist.txt': '# empty\n' },
    },
  );
}

function enforcerFor(server: NginxInstance, capacity?: number): Promise<Enforcer> {
  return modsecurityEnforcer.create(
    ModSecurityConfig.parse({
      active: true,
      ruleset: join(server.dir, 'blocklist.txt'),
      waf_reload_command: `${server.nginx} -t -q && ${server.nginx} -s reload`,
      options: capacity ? { max_entries: capacity } : {},
    }),
    { log: silent },
  );
}

describe('enforcer-modsecurity config', () => {
  it('parses the README sample config and names a missing data file', async () => {
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(await readme())?.[1];
    const parsed = ModSecurityConfig.parse(JSON.parse(sample!));
    expect(parsed.ruleset).toBe('/etc/modsecurity/rampart-blocklist.txt');
    expect(parsed.waf_reload_command).toBe('nginx -t && nginx -s reload');
    expect(ModSecurityConfig.safeParse({ active: true }).error!.issues[0]!.path).toEqual(['ruleset']);
  });
});

describe.skipIf(skip)('enforcer-modsecurity against nginx + libmodsecurity', () => {
  let server: NginxInstance;
  let enforcer: Enforcer;
  beforeAll(async () => {
    server = await modsecNginx();
    enforcer = await enforcerFor(server);
  });
  afterAll(async () => {
    await enforcer?.close();
    await server?.stop();
  });

  it('the README rule denies a listed client with 403 and lets others through', async () => {
    expect(await statusFrom(server.port, '127.0.0.2')).toBe(200);
    await enforcer.sync([{ value: '127.0.0.2/32', score: 80 }, { value: '198.51.100.0/24', score: 20 }]);
    expect(await readFile(join(server.dir, 'blocklist.txt'), 'utf8')).toBe(
      '# rampart block list for @ipMatchFromFile; replaced atomically\n127.0.0.2\n198.51.100.0/24\n',
    );
    await waitFor(async () => (await statusFrom(server.port, '127.0.0.2')) === 403, 'the listed client to get 403');
    expect(await statusFrom(server.port, '127.0.0.1')).toBe(200);
    await enforcer.apply({ add: [{ value: '127.0.0.0/30', score: 50 }], remove: ['127.0.0.2/32'] });
    await waitFor(async () => (await statusFrom(server.port, '127.0.0.1')) === 403, 'the listed network to get 403');
    expect(await statusFrom(server.port, '127.0.0.9')).toBe(200);
    await enforcer.withdraw();
    await waitFor(async () => (await statusFrom(server.port, '127.0.0.2')) === 200, 'the withdrawn list to let clients in');
  });
});

describe.skipIf(skip)('modsecurity conformance', () => {
  let shared: Promise<NginxInstance> | undefined;
  afterAll(async () => (await shared)?.stop());
  enforcerConformance('modsecurity', async ({ capacity }) => {
    shared ??= modsecNginx();
    const server = await shared;
    const file = join(server.dir, 'blocklist.txt');
    await writeFile(file, '');
    return { enforcer: await enforcerFor(server, capacity), reopen: () => enforcerFor(server, capacity), disturb: () => writeFile(file, '') };
  });
});
