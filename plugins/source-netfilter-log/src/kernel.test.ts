import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryOffsetStore } from '@rampart/plugin-kit';
import type { Detection } from '@rampart/plugin-kit';
import { NetnsLab, systemGate, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PacketFilterLogConfig, netfilterLogSource } from './index.ts';

/*
 * The real pipeline: a drop rule with `log group 7` in a server namespace, the kernel's NFLOG
 * messages written by ulogd2 (LOGEMU, the iptables LOG line format) into a file, that file tailed
 * by the source. Kernel LOG lines of other namespaces never reach the host's kernel log unless
 * a host-wide sysctl is changed, so NFLOG through ulogd is the way to see real lines here.
 */

const PLUGINS = '/usr/lib/x86_64-linux-gnu/ulogd';

const RULESET = `table inet rampart_test {
  chain input {
    type filter hook input priority 0; policy accept;
    iifname "eth0" tcp flags & (fin | syn | rst | ack) == syn log group 7 prefix "RAMPART-DROP " drop
  }
}
`;

/** Opens connections to many ports at once from one source; every SYN is dropped (and logged). */
const KNOCK = `
const net = require('node:net');
const [host, from, ports] = process.argv.slice(1);
let left = 0;
for (const port of ports.split(',')) {
  left++;
  const s = net.connect({ host, port: Number(port), localAddress: from });
  const done = () => { s.destroy(); if (--left === 0) process.exit(0); };
  s.setTimeout(400, done);
  s.on('error', done);
  s.on('connect', done);
}
`;

function ulogdConfig(dir: string): string {
  const plugins = ['inppkt_NFLOG', 'raw2packet_BASE', 'filter_IFINDEX', 'filter_IP2STR', 'filter_PRINTPKT', 'output_LOGEMU'];
  return `[global]
logfile="${dir}/ulogd.log"
loglevel=3
${plugins.map((p) => `plugin="${PLUGINS}/ulogd_${p}.so"`).join('\n')}
stack=log1:NFLOG,base1:BASE,ifi1:IFINDEX,ip2str1:IP2STR,print1:PRINTPKT,emu1:LOGEMU

[log1]
group=7

[emu1]
file="${dir}/kern.log"
sync=1
`;
}

describe.skipIf(systemGate('netfilter log through the kernel and ulogd2', { commands: ['nft', 'ip', 'ulogd'], root: true }))('packet_filter with real kernel LOG lines', () => {
  const lab = new NetnsLab();
  let dir: string;
  let client: string;
  let ulogd: ChildProcess | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rampart-nflog-'));
    client = await lab.namespace('cli');
    const server = await lab.namespace('srv');
    await lab.link({ ns: client, dev: 'eth0', addresses: ['198.51.100.10/24', '198.51.100.20/24', '198.51.100.30/24'] }, { ns: server, dev: 'eth0', addresses: ['198.51.100.1/24'] });
    await lab.exec(server, ['nft', '-f', '-'], RULESET);
    await writeFile(join(dir, 'ulogd.conf'), ulogdConfig(dir));
    await writeFile(join(dir, 'kern.log'), '');
    ulogd = spawn('ip', ['netns', 'exec', server, 'ulogd', '-c', join(dir, 'ulogd.conf')], { stdio: 'ignore' });
    // ulogd binds NFLOG group 7 shortly after start; its log says when the stack is up.
    const end = Date.now() + 10_000;
    while (!(await readFile(join(dir, 'ulogd.log'), 'utf8').catch(() => '')).includes('initialization finished') && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  afterAll(async () => {
    ulogd?.kill('SIGTERM');
    await lab.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it('detects a port scan from the logged drops as one attempt, and not a client retrying one port', async () => {
    const config = PacketFilterLogConfig.parse({
      active: true,
      options: { format: 'ulogd', log_path: join(dir, 'kern.log'), log_prefix: 'RAMPART', scan_ports: 10, scan_window_seconds: 60, start_at: 'beginning' },
    });
    const seen: Detection[] = [];
    const stop = new AbortController();
    const running = netfilterLogSource.start(config, 'normal', { log: silent, emit: (d) => seen.push(d), signal: stop.signal, offsets: memoryOffsetStore() });
    try {
      // First the harmless client (one port, five tries), then the scanner: once the scan is
      // detected, the earlier lines have been read too (the file is read in order).
      for (let i = 0; i < 5; i++) await lab.exec(client, [process.execPath, '-e', KNOCK, '198.51.100.1', '198.51.100.20', '443']);
      const ports = Array.from({ length: 12 }, (_, i) => String(2000 + i)).join(',');
      await lab.exec(client, [process.execPath, '-e', KNOCK, '198.51.100.1', '198.51.100.10', ports]);
      const end = Date.now() + 15_000;
      while (seen.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      const logged = (await readFile(join(dir, 'kern.log'), 'utf8')).split('\n').filter((l) => l.includes('RAMPART-DROP'));
      expect(logged.some((l) => /SRC=198\.51\.100\.10 DST=198\.51\.100\.1 .*PROTO=TCP .*DPT=200\d/.test(l))).toBe(true);
      expect(seen.map(({ ip, kind, attempts, source }) => ({ ip, kind, attempts, source }))).toEqual([
        { ip: '198.51.100.10', kind: 'port_scan', attempts: 1, source: 'packet_filter' },
      ]);
    } finally {
      stop.abort();
      await running.done;
    }
  });

  it('counts a connection whose SYN the kernel logged again at each retransmission as one attempt (aggressive mode)', async () => {
    const config = PacketFilterLogConfig.parse({
      active: true,
      options: { format: 'ulogd', log_path: join(dir, 'kern.log'), log_prefix: 'RAMPART', start_at: 'beginning' },
    });
    const seen: Detection[] = [];
    const stop = new AbortController();
    const running = netfilterLogSource.start(config, 'aggressive', { log: silent, emit: (d) => seen.push(d), signal: stop.signal, offsets: memoryOffsetStore() });
    try {
      // One connect() left waiting 3.5 s: the kernel retransmits its SYN (after 1 s, then 2 s more).
      await lab.exec(client, [process.execPath, '-e', KNOCK.replace('setTimeout(400', 'setTimeout(3500'), '198.51.100.1', '198.51.100.30', '8443']);
      // The client has exited: every SYN it sent is in the file (ulogd writes with sync=1).
      const logged = (await readFile(join(dir, 'kern.log'), 'utf8')).split('\n').filter((l) => l.includes('SRC=198.51.100.30 '));
      const mine = () => seen.filter((d) => d.ip === '198.51.100.30');
      const end = Date.now() + 15_000;
      while (mine().length < logged.length && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      const ports = new Set(logged.map((l) => /SPT=(\d+)/.exec(l)?.[1]));
      expect(logged.length).toBeGreaterThanOrEqual(2);
      expect(ports.size).toBe(1);
      expect(mine().map((d) => `${d.kind} ${d.attempts}`)).toEqual(['blocked_packet 1', ...logged.slice(1).map(() => 'blocked_packet 0')]);
    } finally {
      stop.abort();
      await running.done;
    }
  });
});
