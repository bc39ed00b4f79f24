import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { commandsFor, firewallBFeedEnforcer, refusal, type FeedServerEnforcer } from '../src/index.ts';
import { feedConfig, recordingLogger, tempDir } from './helpers.ts';
import { startPanOsStandIn, type PanOsStandIn } from './pan-os-stand-in.ts';

const REFRESH = 'request system external-list refresh type ip name {feed}';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('refresh command parts', () => {
  it('runs the command once per changed feed, or once without {feed}', () => {
    expect(commandsFor(REFRESH, ['a', 'b'])).toEqual([
      'request system external-list refresh type ip name a',
      'request system external-list refresh type ip name b',
    ]);
    expect(commandsFor('execute update-now', ['a', 'b'])).toEqual(['execute update-now']);
  });

  it('finds the line a device CLI refuses with', () => {
    expect(refusal('\nInvalid syntax.\n\nadmin@PA> ')).toBe('Invalid syntax.');
    expect(refusal('Server error : x is not a valid reference\n')).toBe('Server error : x is not a valid reference');
    expect(refusal('Command fail. Return code -61\n')).toBe('Command fail. Return code -61');
    expect(refusal('% Invalid input detected at \'^\' marker.')).toBe("% Invalid input detected at '^' marker.");
    expect(refusal('job 12 enqueued\n')).toBeUndefined();
    expect(refusal('')).toBeUndefined();
  });
});

describe('feed-server asks devices over SSH to refresh after a change', () => {
  let dir: string;
  let good: PanOsStandIn;
  let refusing: PanOsStandIn;
  const goodKnows = ['high', 'all'];
  const refusingKnows: string[] = [];
  let e: FeedServerEnforcer;
  const log = recordingLogger();
  let source = { port: 0, ca: '', auth: 'rampart:feed-pass-1' };

  beforeAll(async () => {
    dir = await tempDir();
    good = await startPanOsStandIn('refresh', 'ssh-pass', () => source, goodKnows);
    refusing = await startPanOsStandIn('refresh', 'ssh-pass', () => source, refusingKnows);
  });
  afterAll(async () => {
    await e?.close();
    await good.stop();
    await refusing.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function open(connections: string[], pins: Record<string, string>) {
    const cfg = feedConfig(dir, {
      feeds: 'high,all',
      connections: connections.join(','),
      command: REFRESH,
      options: { feed_max_entries: { high: 1 }, ssh_user: 'refresh', ssh_password: 'ssh-pass', timeout_seconds: 10, device_host_keys: pins },
    });
    const made = (await firewallBFeedEnforcer.create(cfg, { log })) as FeedServerEnforcer;
    source = { ...source, port: Number(new URL(made.status().url).port), ca: await readFile(join(dir, 'tls', 'cert.pem'), 'utf8') };
    return made;
  }

  it('refreshes each changed feed on the device, which then pulls it; an unchanged set sends nothing', async () => {
    const device = `127.0.0.1:${good.port}`;
    e = await open([device], { [device]: good.hostKeySha256 });
    await e.sync([{ value: '203.0.113.7/32', score: 9 }, { value: '198.51.100.0/24', score: 5 }]);
    expect(good.received).toEqual(['request system external-list refresh type ip name high', 'request system external-list refresh type ip name all']);
    expect(good.edls).toEqual(
      new Map([
        ['high', ['203.0.113.7']],
        ['all', ['198.51.100.0/24', '203.0.113.7']],
      ]),
    );
    const status = e.status();
    expect(status.refresh).toMatchObject({ command: REFRESH, devices: [device], rounds: 1, failed_rounds: 0, errors: [] });
    expect(status.refresh!.last_ok_at).toBe(status.refresh!.last_at);
    // The device's pull is what the status shows as the last fetch.
    expect(status.parts.map((f) => [f.name, f.last_fetch?.client, f.last_fetch?.status, f.fetches])).toEqual([
      ['high', '127.0.0.1', 200, 1],
      ['all', '127.0.0.1', 200, 1],
    ]);
    expect(await e.healthcheck()).toEqual({ ok: true });

    await e.sync([{ value: '203.0.113.7/32', score: 9 }, { value: '198.51.100.0/24', score: 5 }]);
    expect(good.received).toHaveLength(2);
    // A low score changes only the big feed: only it is refreshed.
    await e.apply({ add: [{ value: '192.0.2.1/32', score: 1 }], remove: [] });
    expect(good.received.slice(2)).toEqual(['request system external-list refresh type ip name all']);
    expect(good.edls.get('all')).toEqual(['192.0.2.1', '198.51.100.0/24', '203.0.113.7']);
    await e.close();
  });

  it('reports a device that refuses or cannot be reached, never fails the write, and clears it when it works again', async () => {
    const ok = `127.0.0.1:${good.port}`;
    const bad = `127.0.0.1:${refusing.port}`;
    const dead = `127.0.0.1:${await closedPort()}`;
    e = await open([ok, bad, dead], { [ok]: good.hostKeySha256, [bad]: refusing.hostKeySha256, [dead]: good.hostKeySha256 });
    const warnings = () => log.lines.filter((l) => l.msg === 'device refresh failed; it fetches the feed at its next scheduled update');
    const sent = good.received.length;
    // Resolves: the files are published whatever the devices answer.
    expect(await e.sync([{ value: '192.0.2.77/32', score: 4 }])).toEqual({ enforced: 1, cut: 0 });
    expect(await readFile(join(dir, 'all.txt'), 'utf8')).toBe('192.0.2.77\n');
    expect(good.received.length).toBe(sent + 2);
    expect(good.edls.get('all')).toEqual(['192.0.2.77']);
    expect(refusing.received).toEqual(['request system external-list refresh type ip name high']);
    const refresh = e.status().refresh!;
    expect(refresh).toMatchObject({ rounds: 1, failed_rounds: 1 });
    expect(refresh.last_ok_at).toBeUndefined();
    expect(refresh.errors.map((x) => [x.device, x.error])).toEqual([
      [bad, "'request system external-list refresh type ip name high' refused: Server error : high is not a valid reference"],
      [dead, expect.stringMatching(/^ssh: .*ECONNREFUSED/)],
    ]);
    expect(warnings().map((w) => String(w.data.device)).sort()).toEqual([bad, dead].sort());
    const health = await e.healthcheck();
    expect(health.ok).toBe(false);
    expect(health.detail).toMatch(new RegExp(`^refresh failed on ${bad} \\(.*\\), ${dead} \\(ssh: `));

    // The refusing device learns the feeds; the unreachable one stays listed.
    refusingKnows.push('high', 'all');
    await e.apply({ add: [{ value: '192.0.2.78/32', score: 5 }], remove: [] });
    expect(refusing.edls.get('all')).toEqual(['192.0.2.77', '192.0.2.78']);
    expect(e.status().refresh!.errors.map((x) => x.device)).toEqual([dead]);
    expect(e.status().refresh).toMatchObject({ rounds: 2, failed_rounds: 2 });
  });
});
