// Child process of bench/ipv4.ts: walks GET /api/v1/ips from ts=0 with page_size=1000 following
// next_ts, as an agent's first sync does, on plain Node in a process of its own (pinned by the
// parent). Settings in BENCH_WALK (JSON: url, authorization, seconds, and either `save`: a
// directory each page's body is written to as ips-<ts>.json, or `static: true`: the same walk over
// those files as served by nginx, /ips-<ts>.json); one JSON line on stdout: records, pages,
// seconds, complete, cpuSeconds (this process's user + system time).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const { url, authorization, seconds: cap, save, static: fromFiles } = JSON.parse(process.env.BENCH_WALK);
const pageUrl = (ts) => (fromFiles ? `${url}/ips-${ts}.json` : `${url}/api/v1/ips?ts=${ts}&page_size=1000`);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let ts = 0;
let records = 0;
let pages = 0;
let complete = false;
for (;;) {
  const res = await fetch(pageUrl(ts), { headers: { authorization } });
  if (res.status !== 200) throw new Error(`feed: ${res.status} ${await res.text()}`);
  const text = await res.text();
  if (save) writeFileSync(join(save, `ips-${ts}.json`), text, { mode: 0o644 });
  const page = JSON.parse(text);
  pages += 1;
  if (page.body.length === 0) {
    complete = true;
    break;
  }
  records += page.body.length;
  ts = page.header.next_ts;
  if ((performance.now() - t0) / 1000 > cap) break;
}
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ records, pages, seconds: (performance.now() - t0) / 1000, complete, cpuSeconds: (cpu.user + cpu.system) / 1e6 }));
