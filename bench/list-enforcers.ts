/*
 * List enforcers against their own systems, in one run: nginx (geo include + `nginx -t && nginx
 * -s reload`), ModSecurity (libmodsecurity in nginx, `@ipMatchFromFile` + the same reload),
 * HAProxy (runtime API), the CSV file and the pf table file, each for a full replace of 100,000
 * addresses and a 1,000-address diff, against a baseline doing the same work by hand in the
 * same run (pre-rendered file + the same reload; raw runtime-API commands over the socket; for
 * the files nothing reads, the same text rendered and written atomically by hand).
 * pf: `pfctl` does not run on Linux, so its rows measure the file and a no-op command (`true`)
 * on both sides: the enforcer's own work, not pf's.
 * Also: time from the call to the first 403 of a newly listed client (nginx, HAProxy).
 * Needs nginx (with libnginx-mod-http-modsecurity) and haproxy. Writes
 * bench/results/list-enforcers.md. Run: npx tsx bench/list-enforcers.ts [rounds, default 3]
 */
import { existsSync } from 'node:fs';
import { mkdtemp, open, rename, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PF_LIST_FILE_KEY } from '@rampart/contracts';
import { runShell, type BlockEntry, type Enforcer, type PluginLogger } from '@rampart/plugin-kit';
import { missingSystem, startHaproxy, startNginx, statusFrom, waitFor } from '@rampart/plugin-kit/testing';
import { NginxConfig, geoFormat, nginxEnforcer } from '@rampart/enforcer-nginx';
import { HaproxyConfig, haproxyEnforcer } from '@rampart/enforcer-haproxy';
import { CsvConfig, csvEnforcer } from '@rampart/enforcer-csv';
import { ModSecurityConfig, modsecurityEnforcer } from '@rampart/enforcer-modsecurity';
import { PfConfig, pfEnforcer } from '@rampart/enforcer-pf';

const FULL = 100_000;
const DIFF = 1_000;
const ROUNDS = Number(process.argv[2] ?? 3);
const MODSEC_MODULE = '/usr/share/nginx/modules/ngx_http_modsecurity_module.so';
const silent: PluginLogger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

const missing = missingSystem({ commands: ['nginx', 'haproxy'] });
if (missing) {
  console.log(`bench/list-enforcers: cannot run: ${missing}`);
  process.exit(process.env.CI ? 1 : 0);
}

const address = (i: number) => `100.${64 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}`;
const entries: BlockEntry[] = Array.from({ length: FULL }, (_, i) => ({ value: `${address(i * 3)}/32`, score: 100 + (i % 900) }));
const added = Array.from({ length: DIFF / 2 }, (_, i) => ({ value: `${address(i * 3 + 1)}/32`, score: 500 }));
const removed = entries.slice(0, DIFF / 2).map((e) => e.value);
const afterDiff = [...entries.slice(DIFF / 2), ...added].sort((a, b) => (a.value < b.value ? -1 : 1));
const bare = (cidr: string) => cidr.slice(0, -3);
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
const loadBefore = load();

/** By hand what a careful script does: temp file, fsync, rename, fsync of the directory. */
async function atomicWrite(file: string, text: string): Promise<void> {
  const tmp = `${file}.bench.tmp`;
  const h = await open(tmp, 'w');
  await h.writeFile(text);
  await h.sync();
  await h.close();
  await rename(tmp, file);
  const d = await open(dirname(file), 'r');
  await d.sync();
  await d.close();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

interface Row {
  what: string;
  baseline: string;
  base: number;
  enforcer: number;
  /** Ratio of each round (enforcer / baseline of the same round): the spread under the machine's load. */
  ratios: number[];
}
const rows: Row[] = [];
const notes: string[] = [];

/** Sends raw runtime-API lines in one interactive connection and waits for it to close. */
function raw(socket: string, lines: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ path: socket });
    let out = '';
    s.on('data', (d: Buffer) => (out += d.toString()));
    s.on('error', reject);
    s.on('close', () => resolve(out));
    s.write(`prompt\n${lines.join('\n')}\nquit\n`);
  });
}

async function measure(what: string, baseline: string, base: () => Promise<unknown>, enforcer: () => Promise<unknown>, reset: () => Promise<unknown>) {
  const b: number[] = [];
  const e: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    await reset();
    b.push(await time(base));
    await reset();
    e.push(await time(enforcer));
  }
  rows.push({ what, baseline, base: median(b), enforcer: median(e), ratios: e.map((x, i) => x / b[i]!) });
  console.log(`${what}: baseline ${median(b).toFixed(0)} ms, enforcer ${median(e).toFixed(0)} ms`);
}

// nginx ---------------------------------------------------------------------------------------
{
  const server = await startNginx(
    `geo $rampart_blocked { default 0; include {dir}/geo.conf; }
     server { listen 127.0.0.1:{port}; if ($rampart_blocked) { return 403; } location / { return 200; } }`,
    { files: { 'geo.conf': '' } },
  );
  const file = join(server.dir, 'geo.conf');
  const reload = `${server.nginx} -t -q && ${server.nginx} -s reload`;
  const e: Enforcer = await nginxEnforcer.create(NginxConfig.parse({ active: true, command: reload, options: { geo_file: file } }), { log: silent });
  const fullText = geoFormat.render(entries);
  const diffText = geoFormat.render(afterDiff);
  const handRun = async (text: string) => {
    await writeFile(file, text);
    const r = await runShell(reload);
    if (r.code !== 0) throw new Error(r.stderr);
  };
  await measure('nginx: full replace of 100,000', 'writeFile + same reload', () => handRun(fullText), () => e.sync(entries), () => handRun(''));
  await measure('nginx: 1,000-address diff', 'writeFile + same reload', () => handRun(diffText), () => e.apply({ add: added, remove: removed }), () => e.sync(entries));
  // Time to block: from the call until a newly listed client (127.0.0.2) gets 403.
  await e.sync(entries);
  await waitFor(async () => (await statusFrom(server.port, '127.0.0.2')) === 200, 'unlisted');
  const t = await time(async () => {
    await e.apply({ add: [{ value: '127.0.0.2/32', score: 999 }], remove: [] });
    await waitFor(async () => (await statusFrom(server.port, '127.0.0.2')) === 403, 'listed', 30_000);
  });
  notes.push(`nginx, 100,000 listed: apply of one address to the first 403 for it: ${t.toFixed(0)} ms`);
  await e.close();
  await server.stop();
}

// HAProxy runtime API -------------------------------------------------------------------------
{
  const h = await startHaproxy();
  const e = await haproxyEnforcer.create(HaproxyConfig.parse({ active: true, lb_logs: h.acl, options: { stats_socket: h.socket } }), { log: silent });
  const handFull = async () => {
    const out = await raw(h.socket, [`prepare acl ${h.acl}`]);
    const v = /New version created: (\d+)/.exec(out)![1];
    for (let i = 0; i < FULL; i += 5000) await raw(h.socket, entries.slice(i, i + 5000).map((x) => `add acl @${v} ${h.acl} ${bare(x.value)}`));
    await raw(h.socket, [`commit acl @${v} ${h.acl}`]);
    await writeFile(h.acl, entries.map((x) => bare(x.value)).join('\n'));
  };
  const clear = async () => {
    await raw(h.socket, [`clear acl ${h.acl}`]);
    await e.sync([]);
  };
  await measure('HAProxy: full replace of 100,000 (prepare/add/commit)', 'raw socket commands + file', handFull, () => e.sync(entries), clear);
  const handDiff = () =>
    raw(h.socket, [...removed.map((c) => `del acl ${h.acl} ${bare(c)}`), ...added.map((x) => `add acl ${h.acl} ${bare(x.value)}`)]);
  await measure('HAProxy: 1,000-address diff (del/add)', 'raw socket commands', handDiff, () => e.apply({ add: added, remove: removed }), () => e.sync(entries));
  await e.sync(entries);
  const t = await time(async () => {
    await e.apply({ add: [{ value: '127.0.0.2/32', score: 999 }], remove: [] });
    await waitFor(async () => (await statusFrom(h.port, '127.0.0.2')) === 403, 'listed', 30_000);
  });
  notes.push(`HAProxy, 100,000 listed: apply of one address to the first 403 for it: ${t.toFixed(0)} ms`);
  await e.close();
  await h.stop();
}

// ModSecurity (libmodsecurity in nginx) ---------------------------------------------------------
if (existsSync(MODSEC_MODULE)) {
  const server = await startNginx(
    `server { listen 127.0.0.1:{port}; modsecurity on; modsecurity_rules_file {dir}/rules.conf; location / { return 200; } }`,
    {
      main: `load_module ${MODSEC_MODULE};`,
      files: {
        'rules.conf': `SecRuleEngine On\nSecRule REMOTE_ADDR "@ipMatchFromFile {dir}/blocklist.txt" "id:1900100,phase:1,deny,status:403,log"\n`,
        'blocklist.txt': '# empty\n',
      },
    },
  );
  const file = join(server.dir, 'blocklist.txt');
  const reload = `${server.nginx} -t -q && ${server.nginx} -s reload`;
  const e = await modsecurityEnforcer.create(ModSecurityConfig.parse({ active: true, ruleset: file, waf_reload_command: reload, options: { max_entries: FULL } }), {
    log: silent,
  });
  const handRun = async (text: string) => {
    await writeFile(file, text);
    const r = await runShell(reload);
    if (r.code !== 0) throw new Error(r.stderr);
  };
  const lines = (list: BlockEntry[]) => `${list.map((x) => bare(x.value)).join('\n')}\n`;
  const fullText = lines(entries);
  const diffText = lines(afterDiff);
  await measure('ModSecurity: full replace of 100,000', 'writeFile + same reload', () => handRun(fullText), () => e.sync(entries), () => handRun('# empty\n'));
  await measure('ModSecurity: 1,000-address diff', 'writeFile + same reload', () => handRun(diffText), () => e.apply({ add: added, remove: removed }), () => e.sync(entries));
  await e.close();
  await server.stop();
} else notes.push(`ModSecurity not measured: ${MODSEC_MODULE} missing (apt-get install libnginx-mod-http-modsecurity)`);

// CSV file and pf table file -------------------------------------------------------------------
{
  const dir = await mkdtemp(join(tmpdir(), 'rampart-bench-csv-'));
  const file = join(dir, 'list.csv');
  const e = await csvEnforcer.create(CsvConfig.parse({ active: true, csv_logs: file }), { log: silent });
  const csv = (list: BlockEntry[]) => `cidr,score\n${list.map((x) => `${x.value},${x.score}`).join('\n')}\n`;
  const floor = csv(entries);
  const floors: number[] = [];
  for (let r = 0; r < ROUNDS; r++) floors.push(await time(() => writeFile(file, floor)));
  notes.push(`CSV floor: writeFile of the pre-rendered 100,000 rows, no fsync: ${median(floors).toFixed(1)} ms`);
  await measure('CSV: full replace of 100,000', 'render + atomic write by hand', () => atomicWrite(file, csv(entries)), () => e.sync(entries), () => writeFile(file, ''));
  await measure('CSV: 1,000-address diff', 'render + atomic write by hand', () => atomicWrite(file, csv(afterDiff)), () => e.apply({ add: added, remove: removed }), () => e.sync(entries));

  const pfFile = join(dir, 'pf.table');
  const p = await pfEnforcer.create(PfConfig.parse({ active: true, [PF_LIST_FILE_KEY]: pfFile, pflist_reload_command: 'true' }), { log: silent });
  const table = (list: BlockEntry[]) => `${list.map((x) => bare(x.value)).join('\n')}\n`;
  const pfHand = async (list: BlockEntry[]) => {
    await atomicWrite(pfFile, table(list));
    await runShell('true');
  };
  await measure('pf table file: full replace of 100,000 (pfctl not on Linux: `true`)', 'render + atomic write + `true`', () => pfHand(entries), () => p.sync(entries), () => writeFile(pfFile, ''));
  await measure('pf table file: 1,000-address diff (`true`)', 'render + atomic write + `true`', () => pfHand(afterDiff), () => p.apply({ add: added, remove: removed }), () => p.sync(entries));
  await rm(dir, { recursive: true, force: true });
}

const table = [
  '| what | baseline | baseline ms | enforcer ms | ratio of medians | ratio per round, min–max | ≤ 1.5× |',
  '|---|---|---:|---:|---:|---:|---|',
  ...rows.map((r) => {
    const ratio = r.enforcer / r.base;
    const spread = `${Math.min(...r.ratios).toFixed(2)}–${Math.max(...r.ratios).toFixed(2)}×`;
    return `| ${r.what} | ${r.baseline} | ${r.base.toFixed(0)} | ${r.enforcer.toFixed(0)} | ${ratio.toFixed(2)}× | ${spread} | ${ratio <= 1.5 ? 'met' : 'missed'} |`;
  }),
].join('\n');
const report = `## list-enforcers\n\nMedians of ${ROUNDS} rounds, baseline and enforcer alternating, same run. Load average (1, 5, 15 min): ${loadBefore} before, ${load()} after.\n\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`;
console.log(`\n${report}`);
await writeFile(join(dirname(fileURLToPath(import.meta.url)), 'results', 'list-enforcers.md'), report);
