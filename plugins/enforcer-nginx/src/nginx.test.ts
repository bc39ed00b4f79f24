import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Enforcer } from '@rampart/plugin-kit';
import { enforcerConformance, startNginx, statusFrom, systemGate, waitFor, type NginxInstance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { DEFAULT_NGINX_RELOAD, NginxConfig, nginxEnforcer } from './index.ts';

const skip = systemGate('nginx geo enforcer', { commands: ['nginx'] });

const GEO_SERVER = `
  geo $rampart_blocked { default 0; include {dir}/rampart-geo.conf; }
  server {
    listen 127.0.0.1:{port};
    if ($rampart_blocked) { return 403; }
    location / { return 200 "ok\\n"; }
  }`;

/** A private nginx with the README's geo block, and an enforcer that reloads exactly it. */
async function geoSetup(): Promise<{ server: NginxInstance; enforcer: Enforcer; file: string }> {
  const server = await startNginx(GEO_SERVER, { files: { 'rampart-geo.conf': '' } });
  const file = join(server.dir, 'rampart-geo.conf');
  const config = NginxConfig.parse({
    active: true,
    command: `${server.nginx} -t -q && ${server.nginx} -s reload`,
    options: { geo_file: file },
  });
  return { server, file, enforcer: await nginxEnforcer.create(config, { log: silent }) };
}

describe('enforcer-nginx config', () => {
  it('parses the README sample config and defaults', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = NginxConfig.parse(JSON.parse(sample!));
    expect(parsed.command).toBe(DEFAULT_NGINX_RELOAD);
    expect(parsed.options.geo_file).toBe('/etc/nginx/rampart-blocklist.conf');
    expect(NginxConfig.parse({ active: true }).options.max_entries).toBe(1_000_000);
    expect(NginxConfig.safeParse({ active: true, options: { geo_file: '' } }).error!.issues[0]!.path).toEqual(['options', 'geo_file']);
  });
});

describe.skipIf(skip)('enforcer-nginx against a real nginx', () => {
  let setup: Awaited<ReturnType<typeof geoSetup>>;
  beforeAll(async () => {
    setup = await geoSetup();
  });
  afterAll(async () => {
    await setup?.enforcer.close();
    await setup?.server.stop();
  });

  const listed = () => statusFrom(setup.server.port, '127.0.0.2');
  const other = () => statusFrom(setup.server.port, '127.0.0.1');

  it('answers 403 to a listed client and 200 to others, before and after a diff', async () => {
    expect(await listed()).toBe(200);
    await setup.enforcer.sync([{ value: '127.0.0.2/32', score: 90 }, { value: '203.0.113.0/24', score: 10 }]);
    expect(await readFile(setup.file, 'utf8')).toBe(
      '# rampart block list, included in a geo block; replaced atomically\n127.0.0.2 1;\n203.0.113.0/24 1;\n',
    );
    await waitFor(async () => (await listed()) === 403, 'the listed client to get 403');
    expect(await other()).toBe(200);

    await setup.enforcer.apply({ add: [{ value: '127.0.0.0/30', score: 50 }], remove: ['127.0.0.2/32'] });
    await waitFor(async () => (await other()) === 403, 'the newly listed network to get 403');
    expect(await statusFrom(setup.server.port, '127.0.0.5')).toBe(200);

    await setup.enforcer.apply({ add: [], remove: ['127.0.0.0/30'] });
    await waitFor(async () => (await listed()) === 200 && (await other()) === 200, 'both clients to get 200');
  });

  it('keeps serving the old list when the config test fails', async () => {
    await setup.enforcer.sync([{ value: '127.0.0.2/32', score: 90 }]);
    // Under load, workers of the previous configuration may still answer for a while: wait
    // until several answers in a row come from the new list before breaking the next reload.
    const steadily403 = async () => {
      for (let i = 0; i < 5; i++) if ((await listed()) !== 403) return false;
      return true;
    };
    await waitFor(steadily403, 'every worker to answer the listed client with 403');
    await setup.server.settled();
    await writeFile(join(setup.server.dir, 'nginx.conf.broken'), 'not nginx');
    const broken = await nginxEnforcer.create(
      NginxConfig.parse({
        active: true,
        command: `nginx -p ${setup.server.dir} -c ${setup.server.dir}/nginx.conf.broken -t`,
        options: { geo_file: setup.file },
      }),
      { log: silent },
    );
    await expect(broken.sync([])).rejects.toMatchObject({ code: 'ENFORCER_COMMAND_FAILED' });
    expect(await steadily403()).toBe(true);
    // The include is put back, so the file says what nginx runs and a restart keeps the list.
    expect(await broken.list()).toEqual(['127.0.0.2/32']);
    expect(await setup.enforcer.list()).toEqual(['127.0.0.2/32']);
  });
});

describe.skipIf(skip)('nginx conformance', () => {
  // One nginx for the whole suite (each test gets a fresh enforcer on an emptied include).
  let shared: Promise<NginxInstance> | undefined;
  afterAll(async () => (await shared)?.stop());
  enforcerConformance('nginx', async ({ capacity }) => {
    shared ??= startNginx(GEO_SERVER, { files: { 'rampart-geo.conf': '' } });
    const server = await shared;
    const file = join(server.dir, 'rampart-geo.conf');
    await writeFile(file, '');
    const config = NginxConfig.parse({
      active: true,
      command: `${server.nginx} -t -q && ${server.nginx} -s reload`,
      options: { geo_file: file, ...(capacity ? { max_entries: capacity } : {}) },
    });
    return {
      enforcer: await nginxEnforcer.create(config, { log: silent }),
      reopen: () => nginxEnforcer.create(config, { log: silent }),
      disturb: () => writeFile(file, ''),
    };
  });
});
