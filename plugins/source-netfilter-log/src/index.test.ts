import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BridgeFilterLogConfig, NetfilterParser, PacketFilterLogConfig, parseLoggedPacket } from './index.ts';

process.env.TZ = 'UTC';
const readAt = Date.parse('2025-06-01T00:00:00Z') / 1000;

const kern = (second: number, src: string, dpt: number, extra = 'SYN URGP=0', prefix = 'RAMPART-DROP ') =>
  `May 31 10:00:${String(second).padStart(2, '0')} fw kernel: [ 8123.45${second}] ${prefix}IN=eth0 OUT= MAC=52:54:00:12:34:56:52:54:00:65:43:21:08:00 SRC=${src} DST=192.0.2.10 LEN=60 TOS=0x00 PREC=0x00 TTL=52 ID=4242 DF PROTO=TCP SPT=40000 DPT=${dpt} WINDOW=64240 RES=0x00 ${extra}`;

const options = { mode: 'normal' as const, label: 'packet_filter' as const, logPrefix: '', scanPorts: 5, scanWindowSeconds: 60 };

describe('netfilter LOG lines', () => {
  it('extracts source, destination, protocol, port, family and whether it opens a connection', () => {
    expect(parseLoggedPacket(kern(1, '203.0.113.5', 22).split('kernel: ')[1]!)).toEqual({
      prefix: 'RAMPART-DROP', src: '203.0.113.5', dst: '192.0.2.10', proto: 'TCP', spt: 40000, dpt: 22, bridged: false, opening: true,
    });
    // ulogd's LOGEMU writes the sequence and acknowledgement numbers too: `ACK=0` is not the flag.
    expect(parseLoggedPacket('RAMPART-DROP  IN=eth0 OUT= SRC=198.51.100.20 DST=198.51.100.1 LEN=60 PROTO=TCP SPT=35547 DPT=443 SEQ=378541215 ACK=0 WINDOW=64240 SYN URGP=0 MARK=0x0 ')).toMatchObject({ opening: true, dpt: 443 });
    expect(parseLoggedPacket('IN=eth0 OUT= SRC=2001:db8::9 DST=2001:db8::1 LEN=80 TC=0 HOPLIMIT=57 FLOWLBL=0 PROTO=TCP SPT=1 DPT=443 WINDOW=1 RES=0x00 ACK SYN URGP=0')).toMatchObject({ src: '2001:db8::9', dpt: 443, opening: false });
    expect(parseLoggedPacket('IN=eth0 OUT= MAC source = 52:54:00:12:34:56 MAC dest = 52:54:00:65:43:21 proto = 0x0800 IP SRC=198.51.100.3 IP DST=192.0.2.10, IP tos=0x00, IP proto=17 SPT=5353 DPT=161')).toEqual({
      prefix: '', src: '198.51.100.3', dst: '192.0.2.10', proto: 'UDP', spt: 5353, dpt: 161, bridged: true, opening: true,
    });
    expect(parseLoggedPacket('usb 1-1: new high-speed USB device')).toBeUndefined();
  });

  it('reports a port scan once per window as one attempt, not a busy single port', () => {
    const p = new NetfilterParser(options);
    const lines = [
      ...[22, 22, 22, 22, 22, 22].map((port, i) => kern(i, '198.51.100.7', port)),
      ...[21, 22, 23, 25, 80].map((port, i) => kern(10 + i, '203.0.113.5', port)),
      ...[110, 143, 443].map((port, i) => kern(20 + i, '203.0.113.5', port)), // same window: quiet
      kern(30, '203.0.113.6', 8080, 'ACK URGP=0'), // not an opening packet
    ];
    expect(lines.flatMap((l) => p.push(l, readAt))).toEqual([
      { ts: Date.parse('2025-05-31T10:00:14Z') / 1000, ip: '203.0.113.5', source: 'packet_filter', kind: 'port_scan', attempts: 1 },
    ]);
    expect(p.stats()).toMatchObject({ lines: 15, packets: 15, detections: 1 });
  });

  it('counts one attempt per connection in aggressive mode: SYN retransmissions and the packets of a scan add none', () => {
    const p = new NetfilterParser({ ...options, mode: 'aggressive', scanPorts: 3 });
    const syn = (second: number, src: string, spt: number, dpt: number) => kern(second, src, dpt).replace('SPT=40000', `SPT=${spt}`);
    const lines = [
      // One client retrying port 22: its first SYN retransmitted twice (same source port), then
      // a second connection (new source port).
      syn(0, '198.51.100.7', 41000, 22),
      syn(1, '198.51.100.7', 41000, 22),
      syn(3, '198.51.100.7', 41000, 22),
      syn(4, '198.51.100.7', 41001, 22),
      // A scanner: two ports counted as connection attempts, the third completes the scan, and
      // the ports after it (inside the scan's window) belong to that scan.
      ...[21, 23, 25, 80, 443].map((port, i) => syn(10 + i, '203.0.113.5', 50000 + i, port)),
    ];
    expect(lines.flatMap((l) => p.push(l, readAt)).map((d) => `${d.ip} ${d.kind} ${d.attempts}`)).toEqual([
      '198.51.100.7 blocked_packet 1',
      '198.51.100.7 blocked_packet 0',
      '198.51.100.7 blocked_packet 0',
      '198.51.100.7 blocked_packet 1',
      '203.0.113.5 blocked_packet 1',
      '203.0.113.5 blocked_packet 1',
      '203.0.113.5 blocked_packet 0',
      '203.0.113.5 port_scan 1',
      '203.0.113.5 blocked_packet 0',
      '203.0.113.5 blocked_packet 0',
    ]);
  });

  it('forgets ports that left the window', () => {
    const p = new NetfilterParser({ ...options, scanWindowSeconds: 3 });
    const got = [1, 2, 3, 4, 5, 6].flatMap((port) => p.push(kern(port * 2, '203.0.113.8', port), readAt));
    expect(got).toEqual([]);
  });

  it('separates bridged from routed traffic, honours the prefix, and emits every packet in aggressive mode', () => {
    const bridged = 'May 31 10:00:01 fw kernel: RAMPART-DROP IN=br0 OUT=br0 PHYSIN=veth1 PHYSOUT=veth2 SRC=203.0.113.9 DST=192.0.2.20 LEN=60 PROTO=UDP SPT=1 DPT=53 LEN=40';
    const routed = kern(2, '203.0.113.10', 3389);
    const other = kern(3, '203.0.113.11', 3389, 'SYN URGP=0', 'ACCEPT-LOG ');
    const agg = { ...options, mode: 'aggressive' as const, logPrefix: 'RAMPART' };
    const pf = new NetfilterParser(agg);
    const bf = new NetfilterParser({ ...agg, label: 'bridge_filter' });
    expect([bridged, routed, other].flatMap((l) => pf.push(l, readAt)).map((d) => [d.ip, d.kind, d.source])).toEqual([['203.0.113.10', 'blocked_packet', 'packet_filter']]);
    expect([bridged, routed, other].flatMap((l) => bf.push(l, readAt)).map((d) => [d.ip, d.kind, d.source])).toEqual([['203.0.113.9', 'blocked_packet', 'bridge_filter']]);
    expect(pf.stats()).toMatchObject({ otherFamily: 1, otherPrefix: 1 });
  });

  it('reads journald JSON and bare dmesg lines', () => {
    const p = new NetfilterParser({ ...options, mode: 'aggressive' });
    const json = JSON.stringify({ __REALTIME_TIMESTAMP: '1748685600000000', _TRANSPORT: 'kernel', SYSLOG_IDENTIFIER: 'kernel', MESSAGE: 'IN=eth0 OUT= SRC=192.0.2.99 DST=192.0.2.10 LEN=60 PROTO=TCP SPT=1 DPT=25 SYN URGP=0' });
    const dmesg = '[ 8123.456789] IN=eth0 OUT= SRC=192.0.2.98 DST=192.0.2.10 LEN=60 PROTO=ICMP TYPE=8 CODE=0 ID=1 SEQ=1';
    expect([json, dmesg].flatMap((l) => p.push(l, readAt))).toEqual([
      { ts: 1748685600, ip: '192.0.2.99', source: 'packet_filter', kind: 'blocked_packet', attempts: 1 },
      { ts: readAt, ip: '192.0.2.98', source: 'packet_filter', kind: 'blocked_packet', attempts: 1 },
    ]);
  });
});

describe('netfilter-log config', () => {
  it('parses the README sample config, whose options are the defaults, for both labels', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = JSON.parse(/## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)![1]!) as unknown;
    expect(PacketFilterLogConfig.parse(sample)).toEqual(PacketFilterLogConfig.parse({ active: true }));
    expect(BridgeFilterLogConfig.parse(sample).options.log_path).toBe('/var/log/kern.log');
  });

  it('names the failing fields', () => {
    const r = PacketFilterLogConfig.safeParse({ active: true, options: { scan_ports: 1, input: 'pcap', log_prefix: 'x'.repeat(30) } });
    expect(r.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['options.input', 'options.log_prefix', 'options.scan_ports']);
  });

  it('takes journal:kernel as its log and no other journal location', () => {
    expect(PacketFilterLogConfig.parse({ active: true, options: { log_path: 'journal:kernel' } }).options.log_path).toBe('journal:kernel');
    const r = PacketFilterLogConfig.safeParse({ active: true, options: { log_path: 'journal:sshd' } });
    expect(r.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['options.log_path', 'the only journal location of a packet filter log is journal:kernel']]);
  });
});
