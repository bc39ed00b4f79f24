import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/*
 * Issue 31: docker-compose.yml and the Dockerfile, checked without a Docker daemon (none runs
 * here): every stage, file, command, script, port, volume and dependency they name exists in the
 * build context or is made by an earlier step; the images' Node.js majors satisfy the project's
 * `engines`; the server image runs as a non-root user with a HEALTHCHECK on /readyz; the agent's
 * first-start configuration validates with the real agent.
 */

const repo = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(repo, path), 'utf8');
const json = <T>(path: string) => JSON.parse(read(path)) as T;

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  image: string;
  name: string;
  instructions: Instruction[];
}

/** The Dockerfile's stages: instructions with their continuation lines joined, comments dropped. */
function dockerfileStages(text: string): Stage[] {
  const logical: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || (!line && !current)) continue;
    current += current ? ` ${line.replace(/\\$/, '').trim()}` : line.replace(/\\$/, '').trim();
    if (!line.endsWith('\\')) {
      if (current) logical.push(current);
      current = '';
    }
  }
  const stages: Stage[] = [];
  for (const l of logical) {
    const [op, ...rest] = l.split(/\s+/);
    const args = rest.join(' ');
    if (op!.toUpperCase() === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args)!;
      stages.push({ image: m[1]!, name: m[2] ?? String(stages.length), instructions: [] });
    } else stages.at(-1)!.instructions.push({ op: op!.toUpperCase(), args });
  }
  return stages;
}

const stages = dockerfileStages(read('Dockerfile'));
const stage = (name: string) => stages.find((s) => s.name === name)!;
const all = (s: Stage, op: string) => s.instructions.filter((i) => i.op === op).map((i) => i.args);
/** `COPY [--from=x] [--chown=y] src... dest` → { from, sources, dest }. */
function copies(s: Stage) {
  return all(s, 'COPY').map((args) => {
    const words = args.split(/\s+/);
    const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
    const paths = words.filter((w) => !w.startsWith('--'));
    return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! };
  });
}
const exec = (args: string) => JSON.parse(args.replace(/^CMD\s+/, '')) as string[];
const compose = parse(read('docker-compose.yml')) as {
  services: Record<string, { image?: string; build?: { context: string; dockerfile: string; target: string }; command?: string[]; environment?: Record<string, string>; ports?: string[]; volumes?: string[]; depends_on?: Record<string, { condition: string }>; healthcheck?: { test: string[] }; profiles?: string[] }>;
  volumes: Record<string, unknown>;
};
const services = compose.services;
const minNodeMajor = Number(/>=\s*(\d+)/.exec(json<{ engines: { node: string } }>('package.json').engines.node)![1]);

describe('Dockerfile', () => {
  it('has a build stage, a server stage and an agent stage on supported Node.js majors', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'server', 'agent']);
    for (const s of stages.filter((x) => x.image.startsWith('node:'))) expect(Number(/^node:(\d+)/.exec(s.image)![1])).toBeGreaterThanOrEqual(minNodeMajor);
    expect([stage('build').image, stage('server').image]).toEqual(['node:22-bookworm-slim', 'node:22-bookworm-slim']);
    // The agent image runs the .deb's own Node.js: the version apps/agent/package.json pins.
    const agentNode = json<{ rampart: { node: string } }>('apps/agent/package.json').rampart.node;
    expect(Number(agentNode.split('.')[0])).toBeGreaterThanOrEqual(minNodeMajor);
  });

  it('copies from the build context only files that exist and that .dockerignore lets through', () => {
    const ignored = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    for (const s of stages) {
      for (const c of copies(s).filter((x) => !x.from)) {
        for (const src of c.sources) {
          expect(existsSync(join(repo, src)), `${s.name}: COPY ${src}`).toBe(true);
          expect(ignored.filter((p) => p.replace(/^\*\*\//, '') === src.replace(/\/$/, '')), src).toEqual([]);
        }
      }
    }
    expect(ignored).toContain('**/node_modules');
  });

  it('takes from the build stage only what its steps made or copied in', () => {
    const build = stage('build');
    expect(all(build, 'WORKDIR')).toEqual(['/src']);
    expect(copies(build)).toEqual([{ from: undefined, sources: ['.'], dest: '.' }]);
    const runs = all(build, 'RUN').join(' && ');
    // Each command of the build names a script or npm script that exists.
    expect(runs).toContain('npm ci');
    expect(runs).toContain('node apps/server/scripts/build.mjs');
    expect(existsSync(join(repo, 'apps/server/scripts/build.mjs'))).toBe(true);
    expect(runs).toContain('npm run package -w @rampart/agent -- --out /out');
    expect(json<{ scripts: Record<string, string> }>('apps/agent/package.json').scripts.package).toBe('node scripts/package.mjs');
    const buildScript = read('apps/server/scripts/build.mjs');
    const made: Record<string, boolean> = {
      '/src/node_modules': runs.includes('npm ci'),
      // dist/: main.mjs (the server's CMD) and cli.mjs (demo-key.sh) are entry points of the bundle.
      '/src/apps/server/dist': buildScript.includes('main: `${root}/src/main.ts`') && buildScript.includes('cli: `${root}/src/cli/main.ts`'),
      '/out/': read('apps/agent/scripts/package.mjs').includes('rampart-agent_${version}_${ARCH.deb}.deb'),
    };
    for (const s of stages.slice(1)) {
      for (const c of copies(s).filter((x) => x.from === 'build')) {
        for (const src of c.sources) {
          const inContext = src.startsWith('/src/') && existsSync(join(repo, src.slice('/src/'.length)));
          expect(inContext || made[src] === true, `${s.name}: COPY --from=build ${src}`).toBe(true);
        }
      }
    }
  });

  it('server: the bundle with plain Node as user node, port 8080, HEALTHCHECK on /readyz', () => {
    const server = stage('server');
    expect(all(server, 'WORKDIR')).toEqual(['/app']);
    expect(exec(all(server, 'CMD')[0]!)).toEqual(['node', '--max-semi-space-size=2', 'apps/server/dist/main.mjs']);
    expect(all(server, 'USER')).toEqual(['node']);
    expect(server.instructions.findIndex((i) => i.op === 'USER')).toBeLessThan(server.instructions.findIndex((i) => i.op === 'CMD'));
    const env = all(server, 'ENV').join(' ');
    expect(env).toContain('PORT=8080');
    expect(env).toContain('HOST=0.0.0.0');
    expect(all(server, 'EXPOSE')).toEqual(['8080']);
    const health = all(server, 'HEALTHCHECK')[0]!;
    expect(health).toMatch(/CMD \["node", "-e", ".*fetch\('http:\/\/127\.0\.0\.1:8080\/readyz'\)/);
    expect(read('apps/server/src/routes/health.ts')).toContain("app.get('/readyz'");
    // What the server reads beside its bundle at run time (serverPath): all copied.
    const dests = copies(server).map((c) => c.dest);
    for (const d of ['./apps/server/package.json', './apps/server/dist', './apps/server/migrations', './apps/server/resources', './node_modules', './docker/demo-key.sh']) expect(dests).toContain(d);
  });

  it('server: the health check command itself exits 0 against a ready server and 1 against none', async () => {
    const health = all(stage('server'), 'HEALTHCHECK')[0]!;
    const argv = JSON.parse(health.slice(health.indexOf('CMD ') + 4)) as string[];
    const { createServer } = await import('node:http');
    const srv = createServer((req, res) => res.writeHead(req.url === '/readyz' ? 200 : 404).end());
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const port = (srv.address() as { port: number }).port;
    const script = argv[2]!.replace('127.0.0.1:8080', `127.0.0.1:${port}`);
    // Spawned without blocking this process: the server above answers from its event loop.
    const status = () => new Promise<number | null>((resolve) => spawn(process.execPath, ['-e', script], { stdio: 'ignore' }).once('exit', resolve));
    const ok = await status();
    srv.closeAllConnections();
    await new Promise((resolve) => srv.close(resolve));
    const down = await status();
    expect([argv[0], argv[1], ok, down]).toEqual(['node', '-e', 0, 1]);
  });

  it('agent: the .deb installed, the entrypoint and its configuration copied, the agent run as rampart-agent', () => {
    const agent = stage('agent');
    expect(agent.image).toBe('debian:bookworm-slim');
    expect(all(agent, 'RUN').join(' ')).toContain('apt-get install -y --no-install-recommends /tmp/rampart-agent-deb/rampart-agent_*.deb');
    expect(copies(agent).map((c) => [c.sources.join(' '), c.dest])).toEqual([
      ['/out/', '/tmp/rampart-agent-deb/'],
      ['docker/agent.compose.json', '/usr/local/share/rampart/agent.compose.json'],
      ['docker/agent-entrypoint.sh', '/usr/local/bin/rampart-agent-entrypoint'],
    ]);
    expect(JSON.parse(all(agent, 'ENTRYPOINT')[0]!)).toEqual(['/usr/local/bin/rampart-agent-entrypoint']);
    expect(statSync(join(repo, 'docker/agent-entrypoint.sh')).mode & 0o111).toBe(0o111);
    const entry = read('docker/agent-entrypoint.sh');
    // Paths it uses: placed by the .deb (package.mjs, placeProgram) or by this Dockerfile and compose.
    expect(read('apps/agent/scripts/package.mjs')).toContain("unitPath: '/usr/lib/systemd/system/rampart-agent.service'");
    for (const path of ['/usr/lib/systemd/system/rampart-agent.service', '/usr/bin/rampart-agent', '/usr/local/share/rampart/agent.compose.json', '/var/lib/rampart-bootstrap/admin-key']) expect(entry).toContain(path);
    expect(entry).toMatch(/exec setpriv --reuid=rampart-agent --regid=rampart-agent --groups=adm --inh-caps=-all --bounding-set=-all --no-new-privs -- \$exec_start\n$/);
  });
});

describe('docker-compose.yml', () => {
  it('runs postgres (pg_isready), the server once the database is healthy, the demo key once the server is, then the agent', () => {
    // Without a profile (test/deploy/replicas.test.ts checks the `replicas` profile's services).
    expect(Object.keys(services).filter((name) => !services[name]!.profiles)).toEqual(['postgres', 'server', 'demo-key', 'agent']);
    expect(services.postgres!.healthcheck!.test).toEqual(['CMD', 'pg_isready', '-U', 'rampart', '-d', 'rampart']);
    expect(services.server!.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(services['demo-key']!.depends_on).toEqual({ server: { condition: 'service_healthy' } });
    expect(services.agent!.depends_on).toEqual({ 'demo-key': { condition: 'service_completed_successfully' } });
  });

  it('builds from this Dockerfile: every build context, file and target exists; every image used is built here or pulled', () => {
    const built = new Map<string, string>();
    for (const [name, s] of Object.entries(services)) {
      if (!s.build) continue;
      expect(existsSync(join(repo, s.build.context, s.build.dockerfile)), name).toBe(true);
      expect(stages.map((x) => x.name), name).toContain(s.build.target);
      built.set(s.image!, s.build.target);
    }
    expect(Object.fromEntries(built)).toEqual({ 'rampart-server:local': 'server', 'rampart-agent:local': 'agent' });
    expect(services['demo-key']!.image).toBe('rampart-server:local');
    expect(services.postgres!.image).toBe('postgres:16-bookworm');
    // demo-key's command: a script the server image holds in its WORKDIR.
    expect(services['demo-key']!.command).toEqual(['sh', 'docker/demo-key.sh']);
    expect(existsSync(join(repo, 'docker/demo-key.sh'))).toBe(true);
    expect(read('docker/demo-key.sh')).toContain('node apps/server/dist/cli.mjs key create --username admin@demo.rampart.local');
    expect(read('apps/server/src/services/operators/admin.ts')).toContain("admin: 'admin@demo.rampart.local'");
  });

  it('names only declared volumes (no bind mounts of the checkout), and ports and URLs that match', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const v of s.volumes ?? []) {
        const source = v.split(':')[0]!;
        expect(source.startsWith('.') || source.startsWith('/'), `${name}: ${v}`).toBe(false);
        expect(Object.keys(compose.volumes), `${name}: ${v}`).toContain(source);
      }
    }
    const pg = services.postgres!.environment!;
    const dbUrl = new URL(services.server!.environment!.DATABASE_URL!);
    expect([dbUrl.hostname, dbUrl.port, dbUrl.username, dbUrl.password, dbUrl.pathname]).toEqual(['postgres', '5432', pg.POSTGRES_USER, pg.POSTGRES_PASSWORD, `/${pg.POSTGRES_DB}`]);
    expect(services['demo-key']!.environment!.DATABASE_URL).toBe(services.server!.environment!.DATABASE_URL);
    expect(services.server!.ports).toEqual([`8080:${services.server!.environment!.PORT}`]);
    expect(services.server!.environment!.HOST).toBe('0.0.0.0');
    const agentServer = new URL(services.agent!.environment!.RAMPART_SERVER!);
    expect([agentServer.hostname, agentServer.port, agentServer.pathname]).toEqual(['server', services.server!.environment!.PORT, '/api/v1']);
    // The key hand-over: demo-key writes where the agent reads (read-only there).
    expect(services['demo-key']!.volumes).toContain('bootstrap:/var/lib/rampart-bootstrap');
    expect(services.agent!.volumes).toContain('bootstrap:/var/lib/rampart-bootstrap:ro');
    expect(read('docker/demo-key.sh')).toContain('out=/var/lib/rampart-bootstrap/admin-key');
  });

  it("the agent's first-start configuration validates with the real agent: a sample SSH log, the dry-run enforcer", () => {
    const dir = mkdtempSync(join(tmpdir(), 'rampart-compose-'));
    try {
      const config = read('docker/agent.compose.json').replace('@SERVER@', services.agent!.environment!.RAMPART_SERVER!).replace('@GAID@', services.agent!.environment!.RAMPART_GAID!);
      writeFileSync(join(dir, 'agent.json'), config);
      const r = spawnSync(process.execPath, [join(repo, 'apps/agent/bin/rampart-agent.js'), 'validate-config', join(dir, 'agent.json')], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
      expect([r.status, r.stdout, r.stderr]).toEqual([0, `${join(dir, 'agent.json')}: valid (agent RMP-AGENT-ID-compose; sources: ssh_log; enforcers: dry_run)\n`, '']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
