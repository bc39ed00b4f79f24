import { readFile, unlink } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvFormat } from '@rampart/enforcer-csv';
import { systemGate } from '@rampart/plugin-kit/testing';
import { LAB, startDropLab, watchDrops, type DropLab } from './drop-lab.ts';
import { waitFor } from './support.ts';

/*
 * Server + agent + nftables: a blacklist decision a contributor makes on the server (POST /ips,
 * decision 1) reaches the agent over the sync channel, and the agent's packet_filter enforcer
 * (nftables backend, running nft in the firewall namespace) drops that source's traffic on the
 * input and forward paths while another source passes. Then `nft flush ruleset` in the
 * namespace: the agent's reconcile loop (reconcile_seconds = 1) puts the drop back.
 */
describe.skipIf(systemGate('agent + nftables in a network namespace', { commands: ['nft', 'ip'], root: true }))('agent enforcing packet_filter (nftables) in a namespace', () => {
  let lab: DropLab;
  const listed = LAB.listed(0);
  const probe = (source: string, host: string) => lab.lab.probe(lab.client, source, host, LAB.port);
  const passes = (source: string, host: string) => lab.lab.probeUntil('open', lab.client, source, host, LAB.port);

  beforeAll(async () => {
    lab = await startDropLab({ listed: 1, reconcileSeconds: 1, csv: true });
  }, 60_000);
  afterAll(async () => {
    await lab?.close();
  });

  it('a blacklist decision on the server drops the source in the namespace; another source passes', async () => {
    expect([await passes(listed, LAB.fwLan), await passes(listed, LAB.server), await passes(LAB.unlisted, LAB.fwLan)]).toEqual(['open', 'open', 'open']);

    const watcher = watchDrops(lab.client, listed, LAB.fwLan, LAB.port);
    try {
      await watcher.passing;
      const t0 = Date.now();
      await lab.contributor.reportIp({ ip: listed, confidence: 1, source: 'console', decision: 1 });
      const posted = Date.now() - t0;
      const dropped = (await watcher.firstDrop(20_000)) - t0;
      console.log(`[figure] decision → first dropped probe: ${dropped} ms (POST /ips itself: ${posted} ms)`);
    } finally {
      watcher.stop();
    }

    expect(await probe(listed, LAB.fwLan)).toBe('timeout');
    expect(await probe(listed, LAB.server)).toBe('timeout');
    expect(await passes(LAB.unlisted, LAB.fwLan)).toBe('open');
    expect(await passes(LAB.unlisted, LAB.server)).toBe('open');
    const set = JSON.parse(await lab.nft(['-j', 'list', 'set', 'inet', 'rampart', 'addrs'])) as { nftables: { set?: { elem?: unknown[] } }[] };
    expect(set.nftables.find((o) => o.set)?.set?.elem).toEqual([listed]);
    await waitFor('csv enforcer holding the address', async () => csvFormat.parse(await readFile(lab.csvPath, 'utf8')).includes(`${listed}/32`), 10_000);
  });

  it('after `nft flush ruleset` in the namespace, the reconcile loop restores the drop', async () => {
    const flushedAt = Date.now();
    await lab.nft(['flush', 'ruleset']);
    const emptyAfterFlush = (await lab.nft(['list', 'ruleset'])).trim() === '';
    // Restored: the table is back, wired, holding the address; then the source is dropped again.
    await waitFor('the table restored', async () => (await lab.nft(['list', 'ruleset'])).includes(listed), 15_000, 20);
    console.log(`[figure] nft flush ruleset → table restored: ${Date.now() - flushedAt} ms (reconcile_seconds = 1; ruleset empty right after the flush: ${emptyAfterFlush})`);
    expect(await probe(listed, LAB.fwLan)).toBe('timeout');
    expect(await lab.metric('rampart_agent_drifts_repaired_total{enforcer="packet_filter"}')).toBe(1);
    expect(await probe(listed, LAB.server)).toBe('timeout');
    expect(await passes(LAB.unlisted, LAB.fwLan)).toBe('open');
  });

  it('a deleted csv list comes back within the reconcile interval', async () => {
    const before = await readFile(lab.csvPath, 'utf8');
    await unlink(lab.csvPath);
    const back = await waitFor('csv file re-written', async () => readFile(lab.csvPath, 'utf8'), 15_000, 20);
    expect(back).toBe(before);
    expect(await lab.metric('rampart_agent_drifts_repaired_total{enforcer="csv"}')).toBe(1);
  });
});
