/*
 * Decision → dropped packet (npx tsx bench/decision-to-drop.ts; root, nft and ip needed).
 *
 * The real control plane (PGlite, or PostgreSQL with DATABASE_URL), the real agent (its bin)
 * enforcing `ips.packet_filter` with the nftables backend inside a firewall namespace, and a
 * client namespace probing it (test/e2e/drop-lab.ts). N times, for a fresh source each time: a
 * prober connects every 10 ms; a contributor makes a blacklist decision (POST /ips, decision 1);
 * the time to the start of the first dropped connection attempt is measured. Baseline, same
 * run: the POST /ips request itself. Target: ≤ 2 s. Writes bench/results/decision-to-drop.md.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { missingSystem } from '@rampart/plugin-kit/testing';
import { LAB, startDropLab, watchDrops } from '../test/e2e/drop-lab.ts';

const N = Number(process.env.BENCH_DECISIONS ?? 10);
const PROBE_EVERY_MS = 10;

const missing = missingSystem({ commands: ['nft', 'ip'], root: true });
if (missing) {
  console.error(`decision-to-drop: cannot run here: ${missing}`);
  process.exit(process.env.CI ? 1 : 0);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const lab = await startDropLab({ listed: N, reconcileSeconds: 60, logLevel: 'warn' });
const drops: number[] = [];
const posts: number[] = [];
try {
  for (let i = 0; i < N; i++) {
    const source = LAB.listed(i);
    const watcher = watchDrops(lab.client, source, LAB.fwLan, LAB.port, PROBE_EVERY_MS);
    try {
      await watcher.passing;
      const t0 = Date.now();
      await lab.contributor.reportIp({ ip: source, confidence: 1, source: 'bench', decision: 1 });
      posts.push(Date.now() - t0);
      drops.push((await watcher.firstDrop(10_000)) - t0);
    } finally {
      watcher.stop();
    }
    console.log(`${source}: POST /ips ${posts.at(-1)} ms, first dropped probe after ${drops.at(-1)} ms`);
  }
  const unlisted = await lab.lab.probeUntil('open', lab.client, LAB.unlisted, LAB.fwLan, LAB.port);
  if (unlisted !== 'open') throw new Error(`the unlisted source no longer passes: ${unlisted}`);
} finally {
  await lab.close();
}

const ratio = median(drops) / median(posts);
const rows = [
  `| decision → first dropped probe, median of ${N} | ${median(drops)} ms | POST /ips ${median(posts)} ms | ${ratio.toFixed(1)}× | ≤ 2000 ms |`,
  `| decision → first dropped probe, max | ${Math.max(...drops)} ms | POST /ips max ${Math.max(...posts)} ms | | ≤ 2000 ms |`,
];
const report = `# Decision → dropped packet

\`npx tsx bench/decision-to-drop.ts\` (root; ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}; 2 cores shared with other work; ${new Date().toISOString().slice(0, 10)})

The real server and the real agent (\`apps/agent/bin/rampart-agent.js\` through tsx) with
\`ips.packet_filter\` on the nftables backend (\`options.netns\`: nft runs in a firewall network
namespace). For each of ${N} fresh sources a prober in the client namespace connects to the
firewall every ${PROBE_EVERY_MS} ms; a contributor then POSTs a blacklist decision (\`POST /ips\`,
decision 1). Measured: from just before the POST to the start of the first connection attempt the
firewall dropped (resolution ${PROBE_EVERY_MS} ms). Path: server → sync channel push
(\`decision_changed\`) → agent block state → \`nft -f\` element transaction in the namespace.
Baseline, same run: the POST /ips round trip.

| measure | value | baseline | ratio | target |
|---|---|---|---|---|
${rows.join('\n')}

All ${N} (ms): ${drops.join(', ')}; POST /ips (ms): ${posts.join(', ')}. An unlisted source still
passed afterwards.
`;
await mkdir(new URL('./results/', import.meta.url), { recursive: true });
await writeFile(new URL('./results/decision-to-drop.md', import.meta.url), report);
console.log(report);
process.exit(Math.max(...drops) <= 2000 ? 0 : 1);
