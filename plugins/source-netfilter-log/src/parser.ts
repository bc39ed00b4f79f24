import { canonicalIp, EnvelopeParser, JournalExportAssembler, RecentKeys } from '@rampart/plugin-kit';
import type { Detection, DetectionMode, Envelope, LineParser } from '@rampart/plugin-kit';
import { parseLoggedPacket } from './packet.ts';
import { ScanWindows } from './scan-window.ts';

export interface NetfilterParserOptions {
  mode: DetectionMode;
  /** `packet_filter` reads routed/local traffic, `bridge_filter` bridged traffic. */
  label: 'packet_filter' | 'bridge_filter';
  /** Only LOG lines whose prefix starts with this (e.g. `RAMPART`); empty: every LOG line. */
  logPrefix: string;
  scanPorts: number;
  scanWindowSeconds: number;
  /**
   * `kernel`: LOG lines written by the kernel (only `kernel:` lines count, so no other program
   * writing to the same log can forge one); `ulogd`: ulogd2's LOGEMU file (NFLOG groups), whose
   * lines carry no program name.
   */
  format?: 'kernel' | 'ulogd';
}

// ulogd2 LOGEMU: `Nov 23 11:30:00 host RAMPART-DROP IN=eth0 OUT= MAC=… SRC=…`
const LOGEMU_RE = /^[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \S+ (.*\bIN=.*)$/;

/**
 * Kernel netfilter LOG lines from kern.log/syslog, `journalctl -k` (short, ISO, JSON or export)
 * or `dmesg`-style text. Normal mode reports port scans only; aggressive mode also reports
 * every logged connection attempt (`blocked_packet`), for hosts that LOG only dropped traffic.
 */
export class NetfilterParser implements LineParser {
  private readonly envelopes = new EnvelopeParser();
  private readonly journalExport = new JournalExportAssembler();
  private readonly scans: ScanWindows;
  /**
   * Connections already counted: the kernel logs a dropped TCP SYN again at each retransmission
   * (1 s, 3 s, 7 s, … after the first, for about two minutes) with the same source port; those
   * lines are one connection attempt.
   */
  private readonly connections = new RecentKeys(100_000, 130);
  private readonly counters = { lines: 0, packets: 0, otherFamily: 0, otherPrefix: 0, detections: 0 };

  constructor(private readonly options: NetfilterParserOptions) {
    this.scans = new ScanWindows(options.scanPorts, options.scanWindowSeconds);
  }

  stats(): Record<string, number> {
    return { ...this.counters, trackedSources: this.scans.tracked, trackedConnections: this.connections.size };
  }

  push(line: string, readAt: number): Detection[] {
    this.counters.lines++;
    const exported = this.journalExport.push(line);
    if (exported === null) return [];
    const envelope = exported ?? this.envelopes.parse(line, readAt);
    if (envelope && this.options.format === 'ulogd') {
      const m = LOGEMU_RE.exec(line);
      return m ? this.message({ ...envelope, message: m[1]! }, readAt) : [];
    }
    if (envelope) return envelope.program === 'kernel' ? this.message(envelope, readAt) : [];
    // Bare `dmesg` output carries no wall-clock time: the read time stands in.
    return line.includes('IN=') ? this.message({ ts: readAt, host: '', program: 'kernel', pid: '', message: line }, readAt) : [];
  }

  flush(): Detection[] {
    return [];
  }

  private message(envelope: Envelope, readAt: number): Detection[] {
    const packet = parseLoggedPacket(envelope.message);
    if (!packet) return [];
    this.counters.packets++;
    if (packet.bridged !== (this.options.label === 'bridge_filter')) {
      this.counters.otherFamily++;
      return [];
    }
    if (!packet.prefix.startsWith(this.options.logPrefix)) {
      this.counters.otherPrefix++;
      return [];
    }
    const ip = canonicalIp(packet.src);
    if (ip === undefined || !packet.opening) return [];
    const ts = Number.isFinite(envelope.ts) ? envelope.ts : readAt;
    const out: Detection[] = [];
    // One scan is one attempt, however many packets (and ports) it takes.
    const inScan = this.scans.inScan(ip, ts);
    const scan = packet.dpt !== undefined && this.scans.push(ip, packet.dpt, ts) !== undefined;
    if (this.options.mode === 'aggressive') {
      // One connection attempt is one attempt, however many times its SYN is retransmitted; a
      // packet of a scan already detected, or the one completing it, adds none beside the scan.
      const repeat = packet.spt !== undefined && this.connections.seen(`${ip} ${packet.spt} ${packet.dst} ${packet.dpt} ${packet.proto}`, ts);
      out.push({ ts, ip, source: this.options.label, kind: 'blocked_packet', attempts: repeat || inScan || scan ? 0 : 1 });
    }
    if (scan) out.push({ ts, ip, source: this.options.label, kind: 'port_scan', attempts: 1 });
    this.counters.detections += out.length;
    return out;
  }
}
