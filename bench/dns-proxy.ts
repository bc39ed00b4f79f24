/*
 * DNS response policy zone and Squid URL list enforcers against their own daemons, in one run
 * (issue 21, "Done when"): through the enforcer each plugin definition's `create()` builds (the
 * engine, the file adapter, the reload command), with `ctx.kind` set,
 *   - dns_e (enforcer-bind-rpz, kind domain) into a private `named`: `sync` of a 100,000-name RPZ
 *     zone into an empty one and `apply` of a 100-name diff (50 added, 50 removed), each timed
 *     from the call until `dig` of a name the call listed answers NXDOMAIN (the zone written, `rndc
 *     reload` run, named loaded it);
 *   - proxy_f (enforcer-squid, kind url) into a private Squid in front of a local origin: `sync`
 *     of 1,000 URLs into an empty `url_regex` file and `apply` of a 100-URL diff, each timed from
 *     the call until a GET through the proxy of a URL the call listed gets 403 (the ACL file
 *     written, `squid -k reconfigure` run, Squid re-read it);
 * against the baseline of writing the same bytes to a file alone (plugin-kit's writeFileAtomic:
 * temp file, fsync, rename, directory fsync; no reload), alternating, medians of ROUNDS.
 * Needs named, rndc, dig and squid (Debian bind9, bind9-dnsutils, squid).
 * Writes bench/results/dns-proxy.md. Run: npx tsx bench/dns-proxy.ts
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createSocket } from 'node:dgram';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, setPriority } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runShell, urlCodec, writeFileAtomic, type BlockEntry, type Diff, type Enforcer, type PluginLogger } from '@rampart/plugin-kit';
import { missingSystem, startNamed, startSquid } from '@rampart/plugin-kit/testing';
import { BindRpzConfig, bindRpzEnforcer, rpzZoneFormat } from '@rampart/enforcer-bind-rpz';
import { SquidConfig, squidEnforcer, urlRegexFormat } from '@rampart/enforcer-squid';

const NAMES = 100_000;
const URLS = 1_000;
const DIFF = 100;
const ROUNDS = 5;
/** Pause between two checks while waiting for the daemon to answer the new list. */
const POLL_MS = 5;
const silent: PluginLogger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

const missing = missingSystem({ commands: ['named', 'rndc', 'dig', 'squid'] });
if (missing) {
  console.log(`bench/dns-proxy: cannot run: ${missing}`);
  process.exit(process.env.CI ? 1 : 0);
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const sorted = (xs: BlockEntry[]) => [...xs].sort((a, b) => byText(a.value, b.value));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}
const since = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;

/** Polls `check` every POLL_MS until it holds; returns how many checks it took. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let checks = 0;
  let last: unknown;
  while (Date.now() < deadline) {
    checks += 1;
    try {
      if (await check()) return checks;
    } catch (err) {
      last = err;
    }
    await sleep(POLL_MS);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

/**
 * The response code of one UDP query (type A, recursion desired) to 127.0.0.1:`port`: 0 NOERROR,
 * 3 NXDOMAIN. In-process, so that polling costs ~1 ms where a \`dig\` process costs ~100-200 ms here.
 */
function rcodeOf(port: number, name: string): Promise<number> {
  const id = Math.floor(Math.random() * 65536);
  const labels = name.split('.').flatMap((l) => [Buffer.from([l.length]), Buffer.from(l, 'ascii')]);
  const query = Buffer.concat([Buffer.from([id >> 8, id & 255, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]), ...labels, Buffer.from([0, 0, 1, 0, 1])]);
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    const timer = setTimeout(() => (socket.close(), reject(new Error(`no answer for ${name} within 2 s`))), 2000);
    socket.on('message', (msg: Buffer) => {
      if (msg.length < 12 || msg.readUInt16BE(0) !== id) return;
      clearTimeout(timer);
      socket.close();
      resolve(msg[3]! & 15);
    });
    socket.on('error', (err) => (clearTimeout(timer), socket.close(), reject(err)));
    socket.send(query, port, '127.0.0.1');
  });
}

/** The list before and after a diff of DIFF: the first DIFF/2 entries after `keep` removed, DIFF/2 added (the first of them `probe`). */
function diffOf(entries: BlockEntry[], keep: string, probe: string, fresh: (i: number) => string) {
  const removed = entries.filter((e) => e.value !== keep).slice(0, DIFF / 2).map((e) => e.value);
  const add = [probe, ...Array.from({ length: DIFF / 2 - 1 }, (_, i) => fresh(i))].map((value) => ({ value, score: 800 }));
  const gone = new Set(removed);
  const after = sorted([...entries.filter((e) => !gone.has(e.value)), ...add]);
  return { diff: { add, remove: removed } satisfies Diff, after };
}

interface Row {
  what: string;
  /** Median ms of the baseline: the same bytes written atomically, no reload. */
  base: number;
  /** Median ms until the enforcer call returned (render, write, reload command). */
  call: number;
  /** Median ms from the call until the daemon answered the listed probe as blocked. */
  answer: number;
  checks: number;
  bytes: number;
  /** Median ms of the reload command alone (3 runs). */
  reload: number;
}

/**
 * One subject: a list into a daemon, `sync` of the whole list into an empty target and `apply` of
 * a diff, each alternating with the baseline. `blocked(probe)` asks the daemon; the target is put
 * in the state a round starts from (empty, or the whole list) untimed, and that state is seen at
 * the daemon before the round starts.
 */
async function subject(s: {
  name: string;
  enforcer: Enforcer;
  entries: BlockEntry[];
  fullProbe: string;
  diffProbe: string;
  fresh: (i: number) => string;
  blocked: (value: string) => Promise<boolean>;
  /** Asked once after \`blocked\` first holds: throws unless the daemon blocks the probe (one \`dig\`). */
  confirm?: (value: string) => Promise<void>;
  reloadCommand: string;
  /** The bytes the enforcer writes for `entries` (the baseline writes them). */
  render: (entries: BlockEntry[]) => string;
  /** Equal when the enforcer's file and the baseline's carry the same list (an RPZ zone's serial differs). */
  same: (enforcer: string, baseline: string) => boolean;
  file: string;
  baselineFile: string;
}): Promise<Row[]> {
  const { enforcer: e } = s;
  const { diff, after } = diffOf(s.entries, s.fullProbe, s.diffProbe, s.fresh);
  const fullText = s.render(sorted(s.entries));
  const diffText = s.render(after);
  let state: 'unknown' | 'empty' | 'full' | 'diff' = 'unknown';
  const toEmpty = async () => {
    if (state === 'empty') return;
    await e.sync([]);
    await until(async () => !(await s.blocked(s.fullProbe)), `${s.name}: ${s.fullProbe} unblocked`);
    state = 'empty';
  };
  const toFull = async () => {
    if (state === 'full') return;
    await e.sync(s.entries);
    await until(async () => (await s.blocked(s.fullProbe)) && !(await s.blocked(s.diffProbe)), `${s.name}: the whole list`);
    state = 'full';
  };
  const check = async (expected: BlockEntry[], text: string) => {
    const listed = await e.list();
    const want = sorted(expected).map((x) => x.value);
    if (listed.length !== want.length || listed.some((v, i) => v !== want[i])) throw new Error(`${s.name}: the file does not hold the expected ${expected.length} entries`);
    if (!s.same(await readFile(s.file, 'utf8'), text)) throw new Error(`${s.name}: the enforcer's file and the baseline's differ`);
  };

  // The daemon starts with an empty list: the whole list first, so that every later state change is one the daemon is seen to take.
  await toFull();
  const rows: Row[] = [];
  for (const [what, reset, text, run, probe, expected] of [
    [`sync of ${s.entries.length.toLocaleString('en')} into empty`, toEmpty, fullText, () => e.sync(s.entries), s.fullProbe, s.entries],
    [`diff of ${DIFF} (${DIFF / 2} add, ${DIFF / 2} remove) on ${s.entries.length.toLocaleString('en')}`, toFull, diffText, () => e.apply(diff), s.diffProbe, after],
  ] as const) {
    const base: number[] = [];
    const call: number[] = [];
    const answer: number[] = [];
    let checks = 0;
    for (let r = 0; r < ROUNDS; r += 1) {
      base.push(await time(() => writeFileAtomic(s.baselineFile, text)));
      await reset();
      if (await s.blocked(probe)) throw new Error(`${s.name}: ${probe} blocked before the call`);
      const t = process.hrtime.bigint();
      await run();
      call.push(since(t));
      checks = await until(() => s.blocked(probe), `${s.name}: ${probe} blocked`);
      answer.push(since(t));
      await s.confirm?.(probe);
      state = expected === s.entries ? 'full' : 'diff';
      await check([...expected], text);
    }
    // The reload command alone, on the file just written (named: 'up to date', nothing to load; Squid re-reads it).
    const reload: number[] = [];
    for (let r = 0; r < 3; r += 1) {
      reload.push(
        await time(async () => {
          const out = await runShell(s.reloadCommand);
          if (out.code !== 0) throw new Error(`${s.reloadCommand}: ${out.stderr}`);
        }),
      );
      await until(() => s.blocked(probe), `${s.name}: ${probe} blocked after the reload alone`);
    }
    const row = { what: `${s.name}: ${what}`, base: median(base), call: median(call), answer: median(answer), checks, bytes: Buffer.byteLength(text), reload: median(reload) };
    console.log(`${row.what}: baseline ${row.base.toFixed(1)} ms, call ${row.call.toFixed(1)} ms, until blocked ${row.answer.toFixed(1)} ms`);
    rows.push(row);
  }
  await e.withdraw();
  return rows;
}

const loadAtStart = loadavg().map((l) => l.toFixed(2)).join(' ');
// As bench/nftables.ts: a higher scheduling priority for this process and the daemons it starts,
// so that the machine's other work moves the figures less.
setPriority(0, -10);
const rows: Row[] = [];
const notes: string[] = [];

// dns_e: BIND 9 response policy zone ----------------------------------------------------------
{
  const named = await startNamed({
    zone: 'lan.test',
    records: ['localhost IN A 127.0.0.1', 'probe-full IN A 192.0.2.1', 'probe-diff IN A 192.0.2.2'],
    rpzZone: 'rpz.test',
  });
  try {
    const cfg = BindRpzConfig.parse({ active: true, domains_file: named.rpzFile, options: { zone: 'rpz.test', reload_command: named.reloadCommand } });
    const enforcer = await bindRpzEnforcer.create(cfg, { log: silent, kind: 'domain' });
    const name = (i: number) => `n${i}.bad${i % 1000}.example`;
    // The probes resolve in named's own zone (NOERROR) until listed, then NXDOMAIN.
    const entries = [{ value: 'probe-full.lan.test', score: 900 }, ...Array.from({ length: NAMES - 1 }, (_, i) => ({ value: name(i), score: 100 + (i % 900) }))];
    const format = rpzZoneFormat({ ttl: cfg.options.ttl, action: cfg.options.action, passthru: () => [] });
    const blocked = async (n: string) => {
      const rcode = await rcodeOf(named.port, n);
      if (rcode !== 0 && rcode !== 3) throw new Error(`${n}: rcode ${rcode}`);
      return rcode === 3;
    };
    const confirm = async (n: string) => {
      const { status } = await named.query(n);
      if (status !== 'NXDOMAIN') throw new Error(`dig ${n}: ${status}, not NXDOMAIN`);
    };
    const noSerial = (text: string) => text.replace(/^(@ \d+ IN SOA \S+ \S+) \d+/m, '$1 SERIAL');
    rows.push(
      ...(await subject({
        name: 'dns_e BIND RPZ',
        enforcer,
        entries,
        fullProbe: 'probe-full.lan.test',
        diffProbe: 'probe-diff.lan.test',
        fresh: (i) => `new${i}.added.example`,
        blocked,
        confirm,
        reloadCommand: named.reloadCommand,
        render: (xs) => format.render(xs),
        same: (a, b) => noSerial(a) === noSerial(b),
        file: named.rpzFile,
        baselineFile: join(named.dir, 'baseline.zone'),
      })),
    );
    const digs: number[] = [];
    const udp: number[] = [];
    for (let r = 0; r < 9; r += 1) digs.push(await time(() => named.query('probe-full.lan.test')));
    for (let r = 0; r < 9; r += 1) udp.push(await time(() => rcodeOf(named.port, 'probe-full.lan.test')));
    notes.push(
      `named is polled with an in-process UDP query (${median(udp).toFixed(1)} ms, median of 9) every ${POLL_MS} ms; once it answers NXDOMAIN, one \`dig\` must answer NXDOMAIN too (untimed). One \`dig\` (a process spawn and one query) took ${median(digs).toFixed(1)} ms here, too coarse to poll with.`,
    );
    await enforcer.close();
  } finally {
    await named.stop();
  }
}

// proxy_f: Squid url_regex ACL ----------------------------------------------------------------
{
  const origin = createServer((_req, res) => res.end('origin'));
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  const base = `http://shop.rampart-test.example:${(origin.address() as AddressInfo).port}`;
  const squid = await startSquid({ 'shop.rampart-test.example': '127.0.0.1' });
  try {
    const cfg = SquidConfig.parse({ active: true, urls_file: squid.urlsFile, options: { reload_command: squid.reloadCommand } });
    const enforcer = await squidEnforcer.create(cfg, { log: silent, kind: 'url' });
    // Paths with regex metacharacters, as real URLs carry them (each is escaped in the file).
    const url = (i: number) => `${base}/p/${i}/item.html?id=${i}&q=a+b(c)`;
    const entries = [{ value: `${base}/probe-full`, score: 900 }, ...Array.from({ length: URLS - 1 }, (_, i) => ({ value: url(i), score: 100 + (i % 900) }))];
    for (const x of entries) if (urlCodec.canonical(x.value) !== x.value) throw new Error(`not canonical: ${x.value}`);
    const format = urlRegexFormat(urlCodec);
    const blocked = async (u: string) => {
      const status = await squid.get(u);
      if (status !== 403 && status !== 200) throw new Error(`GET ${u}: ${status}`);
      return status === 403;
    };
    rows.push(
      ...(await subject({
        name: 'proxy_f Squid url_regex',
        enforcer,
        entries,
        fullProbe: `${base}/probe-full`,
        diffProbe: `${base}/probe-diff`,
        fresh: (i) => `${base}/new/${i}`,
        blocked,
        reloadCommand: squid.reloadCommand,
        render: (xs) => format.render(xs),
        same: (a, b) => a === b,
        file: squid.urlsFile,
        baselineFile: join(squid.dir, 'baseline.acl'),
      })),
    );
    const gets: number[] = [];
    for (let r = 0; r < 9; r += 1) gets.push(await time(() => squid.get(`${base}/probe-full`)));
    notes.push(
      `Squid is polled with a GET through it (${median(gets).toFixed(1)} ms, median of 9) every ${POLL_MS} ms. Squid closes its port while it reconfigures and the GET retries a refused connection every 20 ms, so one check can span the whole reconfigure ("checks" 1).`,
    );
    await enforcer.close();
  } finally {
    await squid.stop();
    await new Promise((resolve) => origin.close(resolve));
  }
}
const loadAtEnd = loadavg().map((l) => l.toFixed(2)).join(' ');

const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}×`;
const table = [
  '| what | file bytes | baseline: atomic write alone, ms | enforcer call returned, ms | ratio | until the daemon blocks the probe, ms | ratio | checks (last round) | reload command alone, ms |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (r) => `| ${r.what} | ${r.bytes.toLocaleString('en')} | ${r.base.toFixed(1)} | ${r.call.toFixed(1)} | ${ratio(r.call, r.base)} | ${r.answer.toFixed(1)} | ${ratio(r.answer, r.base)} | ${r.checks} | ${r.reload.toFixed(1)} |`,
  ),
].join('\n');
const report = `## DNS zone reload and Squid reconfigure next to writing the files (bench/dns-proxy.ts)

Run ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} cores; load average (1, 5, 15 min) at the
start ${loadAtStart}, at the end ${loadAtEnd} (the machine is shared: absolute times drift between runs; the
process and the daemons it starts run at nice -10). Medians of ${ROUNDS} rounds, baseline and enforcer alternating.

Each enforcer figure is a call of the enforcer built by the plugin definition's \`create()\` with
\`ctx.kind\` set (\`domain\` for enforcer-bind-rpz, \`url\` for enforcer-squid): the engine, the
file adapter (render, atomic write) and the reload command (\`rndc reload rpz.test\` to a private
\`named\`; \`squid -f <conf> -k reconfigure\` to a private Squid in front of a local origin), both
started by plugin-kit's test helpers (named-instance.ts, squid-instance.ts). "Call returned" is
when \`sync\`/\`apply\` resolved: both reload commands only signal the daemon, which loads the
file afterwards. "Until the daemon blocks the probe" runs from the same call until one name the
call listed (not listed before; it resolves NOERROR in named's own zone otherwise) answers
NXDOMAIN (confirmed by one \`dig\`), or one URL the call listed gets 403 through the proxy; the target is then
read back through the enforcer and must hold exactly the expected list, in the same bytes as the
baseline's file (the zone's SOA serial aside). The start state of a round (empty, or the whole
list) is set through the enforcer and seen at the daemon before the round, untimed.

The baseline is writing the same bytes alone: plugin-kit's \`writeFileAtomic\` (temp file, fsync,
rename, directory fsync) of the text rendered before the timer starts, to a file next to the
daemon's, with no reload. The RPZ zone holds each name and its \`*.\` wildcard (\`CNAME .\`);
the Squid file one anchored, escaped \`url_regex\` per URL. "Reload command alone" is the same
command run by hand after the rounds, 3 times, on the file in place (named answers "up to date":
rndc's own round trip; \`squid -k reconfigure\` is a squid process that reads the configuration
to find the daemon's pid file, then signals it, and the daemon re-reads everything).

${table}

What the first runs (2026-11-27, load average 5-10 with a CI run beside them) showed: the figures
move up to 2× between runs, so read the ratios of one run only. named takes a 100-name diff as
long as the whole zone: the enforcer rewrites the zone file and \`rndc reload\` loads all of it
again (~200,000 records); an incremental path (a dynamic zone and \`nsupdate\`, or
\`ixfr-from-differences\`) is not built. The enforcer's own work for 100,000 names (canonical
forms, render of ~6 MB, read of the previous file, write) is ~0.6 s for a sync and ~0.35 s for a
diff in a process alone (no reload, measured apart from this script); the rest of "call returned"
is \`rndc\` and sharing 2 cores with named. For Squid, the \`squid -k reconfigure\` process
itself is most of the call.

${notes.map((n) => `- ${n}`).join('\n')}
`;
console.log(`\n${report}`);
const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'dns-proxy.md');
await mkdir(dirname(out), { recursive: true });
await writeFile(out, report);
console.log(`wrote ${out}`);
