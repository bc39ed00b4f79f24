/*
 * Decision → dropped packet (npx tsx bench/decision-to-drop.ts; root, nft and ip needed).
 *
 * The real control plane (PGlite, or PostgreSQL with DATABASE_URL), the real agent (its bin)
 * enforcing `ips.packet_filter` (nftables backend, then iptables + ipset) inside a firewall namespace, and a
 * client namespace probing it (test/e2e/drop-lab.ts). N times, for a fresh source each time: a
 * prober connects every 10 ms; a contributor makes a blacklist decision (POST /ips, decision 1);
 * the time to the start of the first dropped connection attempt is measured. Baseline, same
 * run: the POST /ips request itself. Target: ≤ 2 s. Writes bench/results/decision-to-drop.md.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { missingSystem } from '@rampart/plugin-kit/testing';
import { LAB, startDropLab, watchDrops, type PacketFilterBackend } from '../test/e2e/drop-lab.ts';

const N = Number(process.env.BENCH_DECISIONS ?? 10);
const PROBE_EVERY_MS = 10;

const missing = missingSystem({ commands: ['nft', 'ip', 'ipset', 'iptables'], root: true });
if (missing) {
  console.error(`decision-to-drop: cannot run here: ${missing}`);
  process.exit(process.env.CI ? 1 : 0);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

interface Run {
  backend: PacketFilterBackend;
  drops: number[];
  posts: number[];
}

async function measure(backend: PacketFilterBackend): Promise<Run> {
  const lab = await startDropLab({ backend, listed: N, reconcileSeconds: 60, logLevel: 'warn' });
  const run: Run = { backend, drops: [], posts: [] };
  try {
    for (let i = 0; i < N; i++) {
      const source = LAB.listed(i);
      const watcher = watchDrops(lab.client, source, LAB.fwLan, LAB.port, PROBE_EVERY_MS);
      try {
        await watcher.passing;
        const t0 = Date.now();
        await lab.contributor.reportIp({ ip: source, confidence: 1, source: 'bench', decision: 1 });
        run.posts.push(Date.now() - t0);
        run.drops.push((await watcher.firstDrop(10_000)) - t0);
      } finally {
        watcher.stop();
      }
      console.log(`${backend} ${source}: POST /ips ${run.posts.at(-1)} ms, first dropped probe after ${run.drops.at(-1)} ms`);
    }
    const unlisted = await lab.lab.probeUntil('open', lab.client, LAB.unlisted, LAB.fwLan, LAB.port);
    if (unlisted !== 'open') throw new Error(`${backend}: the unlisted source no longer passes: ${unlisted}`);
  } finally {
    await lab.close();
  }
  return run;
}

const runs = [await measure('nftables'), await measure('ipset')];
const rows = runs.flatMap(({ backend, drops, posts }) => [
  `| ${backend}: decision → first dropped probe, median of ${N} | ${median(drops)} ms | POST /ips ${median(posts)} ms | ${(median(drops) / median(posts)).toFixed(1)}× | ≤ 2000 ms |`,
  `| ${backend}: decision → first dropped probe, max | ${Math.max(...drops)} ms | POST /ips max ${Math.max(...posts)} ms | | ≤ 2000 ms |`,
]);
const all = runs.map(({ backend, drops, posts }) => `${backend}: ${drops.join(', ')} (POST /ips: ${posts.join(', ')})`);
const report = `# Decision → dropped packet

\`npx tsx bench/decision-to-drop.ts\` (root; ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}; 2 cores shared with other work; ${new Date().toISOString().slice(0, 10)})

The real server and the real agent (\`apps/agent/bin/rampart-agent.js\` through tsx) with
\`ips.packet_filter\` on the nftables backend, then on iptables + ipset (\`options.netns\`: nft,
or ipset and iptables, run in a firewall network namespace). For each of ${N} fresh sources a prober in the client namespace connects to the
firewall every ${PROBE_EVERY_MS} ms; a contributor then POSTs a blacklist decision (\`POST /ips\`,
decision 1). Measured: from just before the POST to the start of the first connection attempt the
firewall dropped (resolution ${PROBE_EVERY_MS} ms). Path: server → sync channel push
(\`decision_changed\`) → agent block state → \`nft -f\` element transaction (or \`ipset restore\`)
in the namespace.
Baseline, same run: the POST /ips round trip.

| measure | value | baseline | ratio | target |
|---|---|---|---|---|
${rows.join('\n')}

Every decision (ms): ${all.join('; ')}. An unlisted source still passed afterwards.
`;
await mkdir(new URL('./results/', import.meta.url), { recursive: true });
await writeFile(new URL('./results/decision-to-drop.md', import.meta.url), report);
console.log(report);
process.exit(runs.every((r) => Math.max(...r.drops) <= 2000) ? 0 : 1);
