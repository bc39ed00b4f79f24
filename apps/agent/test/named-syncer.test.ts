import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import { sampleDomainPage, sampleDomainRecord, sampleFilePage, sampleFileRecord } from '@rampart/contracts/fixtures';
import { BindRpzConfig, bindRpzEnforcer } from '@rampart/enforcer-bind-rpz';
import { DryRunConfig, dryRunEnforcer, readDryRunFile } from '@rampart/enforcer-dry-run';
import { codecOf } from '@rampart/plugin-kit';
import { createMetrics } from '../src/runtime/metrics.ts';
import type { EnforcerWorker } from '../src/sync/enforcer-worker.ts';
import { NamedBlockState, type NamedSet } from '../src/sync/named-block-state.ts';
import { NamedFeedStateFile } from '../src/sync/named-feed-state.ts';
import { NamedNeverBlock, forKind } from '../src/sync/named-never-block.ts';
import { NamedSyncer, type NamedKind } from '../src/sync/named-syncer.ts';
import { NeverBlock } from '../src/sync/never-block.ts';
import { SyncRefusedError } from '../src/sync/syncer.ts';

const log = pino({ level: 'silent' });
const now = Math.floor(Date.now() / 1000);

/** A control plane stand-in for one named kind: its feed and score lists, edited by each test. */
interface World {
  domains: { domain: string; score: number; ts: number; decision: 0 | 1 | null }[];
  listed: string[];
  files: { md5: string; sha1: string; sha256: string; score: number; ts: number }[];
  lists: Record<string, string[]>;
  asked: string[];
}

describe('named syncer', () => {
  let app: FastifyInstance;
  let dir: string;
  let world: World;
  let workers: EnforcerWorker<NamedSet>[] = [];
  let syncers: NamedSyncer[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'named-syncer-'));
    world = {
      domains: Array.from({ length: 8 }, (_, i) => ({ domain: `host${i}.evil.example`, score: 400, ts: now - 100 + i, decision: null })),
      listed: Array.from({ length: 8 }, (_, i) => `http://host${i}.evil.example`),
      files: [],
      lists: { SHA256: [], SHA1: [], MD5: [] },
      asked: [],
    };
    app = Fastify();
    app.addHook('onRequest', async (req) => {
      world.asked.push(req.url);
    });
    app.get('/api/v1/domains', async (req) => {
      const ts = Number((req.query as { ts: string }).ts);
      const body = world.domains.filter((r) => r.ts > ts).sort((a, b) => a.ts - b.ts).slice(0, 3).map((r) => ({ ...sampleDomainRecord, ...r }));
      return { header: { ...sampleDomainPage.header, ts, next_ts: body.at(-1)?.ts ?? ts }, body };
    });
    app.get('/api/v1/domains/score/:min', async (req, reply) => {
      expect((req.query as { protocol?: string }).protocol).toBe('HTTP');
      const page = Number((req.query as { page?: string }).page ?? 0);
      if ((page + 1) * 5 < world.listed.length) reply.header('next_page', String(page + 1));
      return reply.type('text/plain').send(world.listed.slice(page * 5, page * 5 + 5).join('\n'));
    });
    app.get('/api/v1/files', async (req) => {
      const ts = Number((req.query as { ts: string }).ts);
      const body = world.files.filter((r) => r.ts > ts).map((r) => ({ ...sampleFileRecord, ...r }));
      return { header: { ...sampleFilePage.header, ts, next_ts: body.at(-1)?.ts ?? ts }, body };
    });
    app.get('/api/v1/files/score/:min', async (req, reply) => reply.type('text/plain').send(world.lists[(req.query as { digest: string }).digest]!.join('\n')));
    await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterEach(async () => {
    for (const w of workers) await w.close(1000);
    for (const s of syncers) await s.stop();
    workers = [];
    syncers = [];
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function make(kind: NamedKind, opts: { force?: boolean } = {}) {
    const port = (app.server.address() as AddressInfo).port;
    const never = new NamedNeverBlock({ controlPlane: [], domains: [], urls: [], digests: [], ipv4: new NeverBlock({ ownAddresses: [], controlPlane: [], reservedIps: [], allowList: [] }) });
    const path = join(dir, `${kind}.json`);
    const syncer = new NamedSyncer({
      kind,
      client: new RampartClient({ baseUrl: `http://127.0.0.1:${port}/api/v1`, apiKey: 'k', retries: 0 }),
      state: new NamedBlockState(codecOf(kind), forKind(never, kind)),
      feedState: new NamedFeedStateFile(dir, kind),
      enforcers: () => workers,
      policy: () => ({ threshold: 100, maximumRules: 1000 }),
      log,
      metrics: createMetrics(),
      options: () => ({ pageSize: 100, forceSync: opts.force ?? false, maxRemovalFraction: 0.5, minGuardedRemovals: 2, saveEveryMs: 0 }),
    });
    const enforcer = await dryRunEnforcer.create(DryRunConfig.parse({ active: true, path: join(dir, 'ipv4.json'), kinds: { [kind]: { path } } }), { log, kind });
    workers = [syncer.worker(`dry_run/${kind}`, enforcer)];
    syncers.push(syncer);
    const settled = async (op: Promise<void>) => {
      try {
        await op;
      } finally {
        await syncer.idle();
      }
    };
    return { syncer, settled, enforced: async () => (await readDryRunFile(path))?.enforced ?? [] };
  }

  it('a full sync reads the paged list (protocol prefix stripped) and the feed; refuses a mass removal, then follows it when forced', async () => {
    const { syncer, settled, enforced } = await make('domain');
    await settled(syncer.full());
    expect(await enforced()).toEqual(world.domains.map((d) => d.domain));
    expect(syncer.cursor).toBe(now - 93);
    // Five of eight whitelisted at once: more than half the set.
    for (const [i, d] of world.domains.slice(0, 5).entries()) Object.assign(d, { decision: 0, ts: now + 10 + i });
    world.listed = world.listed.slice(5);
    await expect(settled(syncer.full())).rejects.toBeInstanceOf(SyncRefusedError);
    expect(await enforced()).toHaveLength(8);
    await settled(syncer.full(true));
    expect(await enforced()).toEqual(world.domains.slice(5).map((d) => d.domain));
  });

  it('refuses an empty server list while it enforces something; a pushed decision applies at once', async () => {
    const { syncer, settled, enforced } = await make('domain');
    await settled(syncer.full());
    world.listed = [];
    await expect(settled(syncer.full())).rejects.toMatchObject({ reason: 'empty_list' });
    expect(await enforced()).toHaveLength(8);
    await settled(syncer.decision('HOST3.evil.example', 0, null));
    expect(await enforced()).not.toContain('host3.evil.example');
    await settled(syncer.decision('new.evil.example', 1, null));
    expect(await enforced()).toContain('new.evil.example');
  });

  it('whitelist decisions reach an enforcer that takes them (RPZ passthru), also on a name nobody reported, and leave when cleared', async () => {
    const { syncer, settled } = await make('domain');
    const zoneFile = join(dir, 'rpz.db');
    const rpz = await bindRpzEnforcer.create(BindRpzConfig.parse({ active: true, domains_file: zoneFile, options: { zone: 'rpz.test', reload_command: 'true' } }), { log, kind: 'domain' });
    workers.push(syncer.worker('dns_e/domain', rpz));
    const zone = async () => (await readFile(zoneFile, 'utf8')).split('\n').filter((l) => / CNAME /.test(l) && l.includes('host'));
    await settled(syncer.full());
    expect(await zone()).toHaveLength(16);
    expect((await zone()).filter((l) => l.includes('rpz-passthru'))).toEqual([]);
    // A name under a blocked one, never reported: its whitelist becomes a passthru rule.
    await settled(syncer.decision('OK.host1.evil.example', 0, null));
    await settled(syncer.decision('host3.evil.example', 0, null));
    expect((await zone()).filter((l) => l.includes('rpz-passthru'))).toEqual([
      'host3.evil.example CNAME rpz-passthru.',
      '*.host3.evil.example CNAME rpz-passthru.',
      'ok.host1.evil.example CNAME rpz-passthru.',
      '*.ok.host1.evil.example CNAME rpz-passthru.',
    ]);
    expect(await zone()).not.toContain('host3.evil.example CNAME .');
    expect(await zone()).toContain('host1.evil.example CNAME .');
    // The whitelist survives a full sync (the server's list does not name it).
    await settled(syncer.full());
    expect((await zone()).filter((l) => l.includes('rpz-passthru'))).toHaveLength(4);
    await settled(syncer.decision('ok.host1.evil.example', -1, null));
    expect((await zone()).filter((l) => l.includes('rpz-passthru'))).toEqual(['host3.evil.example CNAME rpz-passthru.', '*.host3.evil.example CNAME rpz-passthru.']);
  });

  it('resumes from the cursor saved on disk: a restart pulls only what is newer', async () => {
    const first = await make('domain');
    await first.settled(first.syncer.full());
    await first.syncer.stop();
    world.domains.push({ domain: 'late.evil.example', score: 500, ts: now + 50, decision: null });
    world.asked = [];
    const second = await make('domain');
    await second.syncer.restore();
    expect(second.syncer.cursor).toBe(now - 93);
    await second.settled(second.syncer.incremental());
    // From the saved cursor, then from the new record's ts (the empty page that ends the walk).
    expect(world.asked).toEqual([`/api/v1/domains?ts=${now - 93}`, `/api/v1/domains?ts=${now + 50}`]);
    expect(await second.enforced()).toEqual([...world.domains.slice(0, 8).map((d) => d.domain), 'late.evil.example'].sort());
  });

  it('files: the three digest lists reconcile, every digest of a record is enforced', async () => {
    const { syncer, settled, enforced } = await make('file');
    world.files = [{ md5: 'A'.repeat(32), sha1: 'B'.repeat(40), sha256: '', score: 300, ts: now }];
    world.lists = { SHA256: ['d'.repeat(64)], SHA1: ['B'.repeat(40)], MD5: ['A'.repeat(32)] };
    await settled(syncer.full());
    expect(world.asked.filter((u) => u.includes('/files/score/')).map((u) => new URL(u, 'http://x').searchParams.get('digest'))).toEqual(['SHA256', 'SHA1', 'MD5']);
    expect(await enforced()).toEqual(['A'.repeat(32), 'B'.repeat(40), 'D'.repeat(64)]);
  });
});
