/** The fields of a kernel netfilter LOG (or nft `log`) line that the source uses. */
export interface LoggedPacket {
  prefix: string;
  src: string;
  dst: string;
  proto: string;
  spt: number | undefined;
  dpt: number | undefined;
  /** Bridged traffic: br_netfilter's PHYSIN=/PHYSOUT= or an ebtables log line. */
  bridged: boolean;
  /** A connection attempt: TCP SYN without ACK, or any UDP/ICMP/other packet. */
  opening: boolean;
}

const FIELD = /\b([A-Z]+)=(\S*)/g;
// ebtables' log target: `IN=eth0 OUT= MAC source = … IP SRC=1.2.3.4 IP DST=5.6.7.8, IP tos=0x00, IP proto=6 SPT=1 DPT=2`
const EBTABLES = /\bIP SRC=(?<src>[\d.]+) IP DST=(?<dst>[\d.]+), IP tos=\S+, IP proto=(?<proto>\d+)(?: SPT=(?<spt>\d+) DPT=(?<dpt>\d+))?/;
const IP_PROTOCOLS: Record<string, string> = { '1': 'ICMP', '6': 'TCP', '17': 'UDP', '58': 'ICMPv6' };

/**
 * Parses the message part of a kernel log line (after `kernel:`), e.g.
 * `[12345.678] RAMPART-DROP IN=eth0 OUT= MAC=… SRC=203.0.113.5 DST=192.0.2.10 … PROTO=TCP SPT=4242 DPT=22 … SYN URGP=0`.
 * Returns undefined for kernel messages that are not netfilter LOG lines.
 */
export function parseLoggedPacket(message: string): LoggedPacket | undefined {
  const inAt = message.indexOf('IN=');
  if (inAt === -1) return undefined;
  const prefix = message.slice(0, inAt).replace(/^\[\s*\d+\.\d+\]\s*/, '').trim();
  const ebt = EBTABLES.exec(message);
  if (ebt) {
    const g = ebt.groups!;
    return { prefix, src: g.src!, dst: g.dst!, proto: IP_PROTOCOLS[g.proto!] ?? g.proto!, spt: g.spt ? Number(g.spt) : undefined, dpt: g.dpt ? Number(g.dpt) : undefined, bridged: true, opening: true };
  }
  const fields = new Map<string, string>();
  let syn = false;
  let ack = false;
  for (const m of message.slice(inAt).matchAll(FIELD)) if (!fields.has(m[1]!)) fields.set(m[1]!, m[2]!);
  // TCP flags are bare words after the ports (ulogd also writes `SEQ=… ACK=0`: not the flag).
  if (/ SYN(?= |$)/.test(message)) syn = true;
  if (/ ACK(?= |$)/.test(message)) ack = true;
  const src = fields.get('SRC');
  const dst = fields.get('DST');
  const proto = fields.get('PROTO');
  if (!src || !dst || !proto) return undefined;
  return {
    prefix,
    src,
    dst,
    proto,
    spt: port(fields.get('SPT')),
    dpt: port(fields.get('DPT')),
    bridged: fields.has('PHYSIN') || fields.has('PHYSOUT'),
    opening: proto !== 'TCP' || (syn && !ack),
  };
}

function port(text: string | undefined): number | undefined {
  return text !== undefined && /^\d{1,5}$/.test(text) ? Number(text) : undefined;
}
