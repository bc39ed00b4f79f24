import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { systemGate } from '@rampart/plugin-kit/testing';

/*
 * Issue 36 item 4: the ways to run N replicas (docs/scaling.md), checked without Docker or
 * systemd running: the compose profile `replicas` (parsed), the systemd template unit
 * (`systemd-analyze verify` of an instance) and both HAProxy configurations (`haproxy -c`), which
 * carry the settings the replica suite (test/faults/replicas.test.ts) runs with.
 */

const repo = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(repo, path), 'utf8');

interface Service {
  image?: string;
  profiles?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  configs?: Array<{ source: string; target: string }>;
}
const compose = parse(read('docker-compose.yml')) as { services: Record<string, Service>; configs: Record<string, { file: string }> };
const services = compose.services;

/** The lines of HAProxy's `backend replicas` and the settings the replica suite uses. */
const SUITE_SETTINGS = [
  'timeout tunnel 1h',
  'retries 3',
  'option redispatch 1',
  'retry-on conn-failure empty-response',
  'option forwardfor',
  'balance roundrobin',
  'option http-server-close',
  'option httpchk GET /readyz',
  'http-check expect status 200',
  'timeout check 2s',
];
const lines = (text: string) => text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));

const haproxyGate = systemGate('haproxy -c', { commands: ['haproxy'] });
const systemdGate = systemGate('systemd-analyze verify', { commands: ['systemd-analyze'] });

describe('docker-compose.yml, profile replicas', () => {
  it('adds replicas of the server image on the same database and HAProxy in front, only with the profile', () => {
    const profiled = Object.entries(services).filter(([, s]) => s.profiles).map(([name, s]) => [name, s.profiles]);
    expect(profiled).toEqual([
      ['replica', ['replicas']],
      ['lb', ['replicas']],
    ]);
    const replica = services.replica!;
    expect(replica.image).toBe(services.server!.image);
    expect(replica.environment).toEqual({ ...services.server!.environment });
    expect(replica.environment!.RATE_LIMIT_REPLICAS).toBe('${RATE_LIMIT_REPLICAS:-1}');
    // Each replica keeps its data directory in its own container: no volume shared between them.
    expect(replica.volumes).toBeUndefined();
    expect(replica.ports).toBeUndefined();
    expect(replica.depends_on).toEqual({ server: { condition: 'service_healthy' } });
    expect(replica.deploy!.replicas).toBe(2);
  });

  it('runs HAProxy 2.6 with the configuration of the repository, published apart from the single server', () => {
    const lb = services.lb!;
    expect(lb.image).toBe('haproxy:2.6-bookworm');
    expect(lb.configs).toEqual([{ source: 'haproxy', target: '/usr/local/etc/haproxy/haproxy.cfg' }]);
    expect(compose.configs.haproxy!.file).toBe('./docker/haproxy-replicas.cfg');
    expect(existsSync(join(repo, 'docker/haproxy-replicas.cfg'))).toBe(true);
    expect(lb.ports).toEqual(['8090:8080']);
    expect(services.server!.ports).toEqual(['8080:8080']);
    const cfg = lines(read('docker/haproxy-replicas.cfg'));
    for (const setting of SUITE_SETTINGS) expect(cfg, setting).toContain(setting);
    expect(cfg).toContain('bind :8080');
    // Its back ends are the compose services, on the port their environment names.
    const port = services.server!.environment!.PORT;
    expect(cfg).toContain(`server server server:${port} check`);
    expect(cfg).toContain(`server-template replica 16 replica:${port} check`);
    expect(cfg).toContain('nameserver dns 127.0.0.11:53');
  });
});

describe('deploy/systemd/rampart-server@.service', () => {
  const unit = read('deploy/systemd/rampart-server@.service');

  it('runs the production bundle, one data directory and port per instance', () => {
    expect(unit).toContain('ExecStart=/usr/bin/node --max-semi-space-size=2 /opt/rampart/apps/server/dist/main.mjs');
    expect(read('apps/server/scripts/build.mjs')).toContain('main: `${root}/src/main.ts`');
    expect(unit).toContain('Environment=NODE_ENV=production HOST=127.0.0.1 PORT=%i DATA_DIR=/var/lib/rampart/replica-%i');
    expect(unit).toContain('StateDirectory=rampart/replica-%i');
    expect(unit).toContain('EnvironmentFile=/etc/rampart/server.env');
    expect(unit).toContain('KillSignal=SIGTERM');
  });

  it.skipIf(systemdGate)('passes systemd-analyze verify as instance 8081', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rampart-unit-'));
    try {
      // Node.js where this test runs stands in for /usr/bin/node: verify checks the command exists.
      writeFileSync(join(dir, 'rampart-server@.service'), unit.replace('/usr/bin/node', process.execPath));
      const r = spawnSync('systemd-analyze', ['verify', join(dir, 'rampart-server@8081.service')], { encoding: 'utf8', cwd: dir });
      expect([r.status, r.stderr.trim()]).toEqual([0, '']);
      // The check itself fails on a bad unit.
      writeFileSync(join(dir, 'rampart-server@.service'), unit.replace('/usr/bin/node', process.execPath).replace('Type=simple', 'Type=nonsense'));
      const bad = spawnSync('systemd-analyze', ['verify', join(dir, 'rampart-server@8081.service')], { encoding: 'utf8', cwd: dir });
      expect(bad.stderr).toContain('Failed to parse service type');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deploy/haproxy/rampart.cfg', () => {
  it('balances the three instances of the systemd template with the replica suite settings', () => {
    const cfg = lines(read('deploy/haproxy/rampart.cfg'));
    for (const setting of SUITE_SETTINGS) expect(cfg, setting).toContain(setting);
    expect(cfg.filter((l) => l.startsWith('server '))).toEqual(['server r8081 127.0.0.1:8081 check', 'server r8082 127.0.0.1:8082 check', 'server r8083 127.0.0.1:8083 check']);
  });

  it.skipIf(haproxyGate)('is valid for haproxy -c, as is the compose one', () => {
    for (const file of ['deploy/haproxy/rampart.cfg', 'docker/haproxy-replicas.cfg']) {
      const r = spawnSync('haproxy', ['-c', '-f', join(repo, file)], { encoding: 'utf8' });
      expect([file, r.status, `${r.stdout}${r.stderr}`]).toEqual([file, 0, expect.stringContaining('Configuration file is valid')]);
      // Only the compose services' names may fail to resolve here (Docker's DNS resolves them).
      const warnings = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.includes('[WARNING]'));
      for (const w of warnings) expect(w, file).toMatch(/could not resolve address '(server|replica)'/);
    }
  });
});
