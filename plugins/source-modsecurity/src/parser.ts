import { canonicalIp, EnvelopeParser } from '@rampart/plugin-kit';
import type { Detection, DetectionMode, LineParser } from '@rampart/plugin-kit';
import { accessLogTime, apacheErrorTime, auditTime, nginxErrorTime } from './timestamps.ts';
import { requestKeyOf, SeenTransactions, uniqueIdOf } from './transactions.ts';

/*
 * The `waf_log` parser. Patterns follow fail2ban 1.0.2's apache-modsecurity, nginx-http-auth,
 * nginx-limit-req, nginx-botsearch and nginx-bad-request filters; normal mode is their default
 * (`normal`/`auth`), aggressive adds nginx-http-auth's `fallback` (TLS handshake garbage) and
 * ModSecurity messages that did not deny (DetectionOnly engines).
 */

const APACHE_RE =
  /^\[(?<date>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)? \d{4})\] \[(?::?error|\S+:\S+)\](?: \[pid (?<pid>\d+(?::\S+ \d+)?)\])? \[client (?<c1>[^\]]+)\](?: \[client (?<c2>[^\]]+)\])? ModSecurity:\s+(?<rest>.*)$/;
const NGINX_ERROR_RE = /^(?<date>\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d) \[(?<level>[a-z]+)\] (?<worker>\d+)#\d+: (?:\*(?<conn>\d+) )?(?<msg>.*)$/;
const ACCESS_RE = /^(?<host>\S+) - (?<user>\S+) \[(?<date>[^\]]+)\] "(?<request>[^"]*)" (?<status>\d{3})(?: |$)/;

// ModSecurity message: bracketed tags in any order, then the disruptive action. fail2ban's
// `\[(?:\w+ "[^"]*"|[^\]]*)\]` lets both alternatives match `[id "1"]`, which backtracks
// exponentially on a line of many tags that ends without a denial; here a tag is unquoted
// characters or quoted strings, which never overlap, so matching stays linear.
const MODSEC_DENIED = /^(?:\[(?:[^\]"]|"[^"]*")*\]\s*)*Access denied with code [45]\d\d/;
const HOST = String.raw`(?<host>[0-9A-Fa-f:.]+|[\w\-.^_]*\w)`;
const NGINX_AUTH = new RegExp(String.raw`^user "(?:[^"]+|.*?)":? (?:password mismatch|was not found in "[^"]*"), client: ${HOST}, server: \S*, request: "\S+ \S+ HTTP/\d+\.\d+", host: "\S+"(?:, referrer: "\S+")?\s*$`);
const NGINX_LIMIT = new RegExp(String.raw`^limiting requests, excess: [\d.]+ by zone "[^"]+", client: ${HOST},`);
const BLOCK = String.raw`\/?(?:roundcube|(?:ext)?mail|horde|(?:v-?)?webmail|(?:typo3\/|xampp\/|admin\/|)(?:pma|(?:php)?[Mm]y[Aa]dmin)|wp-(?:login|signup|admin)\.php|cgi-bin|mysqladmin)[^,]*`;
const NGINX_BOTSEARCH = new RegExp(String.raw`^(?:\S+ )?"\S+" (?:failed|is not found) \(2: No such file or directory\), client: ${HOST}, server: \S*, request: "(?:GET|POST|HEAD) \/${BLOCK} \S+", .*?$`);
const ACCESS_BOTSEARCH = new RegExp(String.raw`^(?:GET|POST|HEAD) \/${BLOCK} \S+$`);
const NGINX_TLS = new RegExp(String.raw`^SSL_do_handshake\(\) failed \(SSL: error:\S+(?: \S+){1,3} too (?:long|short)\)[^,]*, client: ${HOST}`);
// The connector writes `[client …]` first; some builds leave it out, and then nginx's own suffix
// (`, client: A, server: S, request: "…", host: "…"`, read from the end of the line, after any
// text the client chose) names the address.
const NGINX_MODSEC = /^(?:\[client (?<c1>[^\]]+)\] )?ModSecurity:\s+(?<rest>.*)$/;
const NGINX_SUFFIX = /, client: (?<host>[^,\s]+), server: [^,]*, request: "(?<request>[^"]*)"(?:, [a-z_]+: "[^"]*")*\s*$/;

export interface WafParserStats {
  lines: number;
  detections: number;
  hostNames: number;
}

export class WafParser implements LineParser {
  readonly counters: WafParserStats = { lines: 0, detections: 0, hostNames: 0 };
  private readonly envelopes = new EnvelopeParser();
  private readonly transactions = new SeenTransactions();

  constructor(private readonly mode: DetectionMode) {}

  stats(): Record<string, number> {
    return { ...this.counters };
  }

  push(line: string, readAt: number): Detection[] {
    this.counters.lines++;
    const found = this.parse(line, readAt);
    if (found) return found;
    // Web servers logging through syslog: parse the message inside the envelope.
    const envelope = this.envelopes.parse(line, readAt);
    if (!envelope || !/^(?:nginx|apache\d*|httpd)$/.test(envelope.program)) return [];
    return this.parse(envelope.message, readAt, envelope.ts) ?? [];
  }

  flush(): Detection[] {
    return [];
  }

  private parse(line: string, readAt: number, envelopeTs?: number): Detection[] | undefined {
    const c = line.charCodeAt(0);
    if (c === 123 /* { */) return this.audit(line, readAt);
    if (c === 91 /* [ */) {
      const m = APACHE_RE.exec(line);
      if (!m) return undefined;
      const g = m.groups!;
      return this.modsec(g.rest!, g.c2 ?? g.c1!, apacheErrorTime(g.date!), envelopeTs ?? readAt, g.pid === undefined ? undefined : `apache ${g.pid}`);
    }
    const e = NGINX_ERROR_RE.exec(line);
    if (e) {
      const g = e.groups!;
      return this.nginxError(g.level!, g.msg!, nginxErrorTime(g.date!), envelopeTs ?? readAt, g.conn === undefined ? undefined : `nginx ${g.worker}*${g.conn}`);
    }
    const a = ACCESS_RE.exec(line);
    if (a) return this.access(a.groups!, envelopeTs ?? readAt);
    return undefined;
  }

  /**
   * `worker`: the web server's worker that handled the request (Apache `pid:tid`, nginx
   * `pid*connection`), `request`: nginx's request line; they identify the request of a message
   * without `[unique_id]` (transactions.ts).
   */
  private modsec(rest: string, client: string, ts: number, fallback: number, worker: string | undefined, request?: string): Detection[] {
    let kind: string;
    if (MODSEC_DENIED.test(rest)) kind = 'modsec_block';
    else if (this.mode === 'aggressive' && rest.startsWith('Warning.')) kind = 'modsec_alert';
    else return [];
    const id = uniqueIdOf(rest) ?? requestKeyOf(rest, worker, client, ts, request);
    return this.hit(client, ts, fallback, kind, this.transactions.attempts(id));
  }

  private nginxError(level: string, msg: string, ts: number, fallback: number, worker: string | undefined): Detection[] {
    let m: RegExpExecArray | null;
    if (level === 'error' && (m = NGINX_AUTH.exec(msg))) return this.hit(m.groups!.host!, ts, fallback, 'http_auth_failure');
    if ((m = NGINX_LIMIT.exec(msg))) return this.hit(m.groups!.host!, ts, fallback, 'rate_limited');
    if (level === 'error' && (m = NGINX_BOTSEARCH.exec(msg))) return this.hit(m.groups!.host!, ts, fallback, 'bot_search');
    if ((m = NGINX_MODSEC.exec(msg))) {
      const rest = m.groups!.rest!;
      const suffix = NGINX_SUFFIX.exec(rest)?.groups;
      const client = m.groups!.c1 ?? suffix?.host;
      return client === undefined ? [] : this.modsec(rest, client, ts, fallback, worker, suffix?.request);
    }
    if (this.mode === 'aggressive' && level === 'crit' && (m = NGINX_TLS.exec(msg))) return this.hit(m.groups!.host!, ts, fallback, 'tls_probe');
    return [];
  }

  private access(g: Record<string, string | undefined>, fallback: number): Detection[] {
    const ts = accessLogTime(g.date!);
    if (g.status === '400') return this.hit(g.host!, ts, fallback, 'bad_request');
    if (g.status === '404' && ACCESS_BOTSEARCH.test(g.request!)) return this.hit(g.host!, ts, fallback, 'bot_search');
    return [];
  }

  /**
   * One ModSecurity JSON audit record (SecAuditLogFormat JSON): libmodsecurity 3
   * (`transaction.client_ip`, `response.http_code`, `messages`) or ModSecurity 2
   * (`transaction.remote_address`, `response.status`, `audit_data.messages`).
   */
  private audit(line: string, readAt: number): Detection[] | undefined {
    let record: AuditRecord;
    try {
      record = JSON.parse(line) as AuditRecord;
    } catch {
      return undefined;
    }
    const t = record?.transaction;
    if (typeof t !== 'object' || t === null) return undefined;
    const client = t.client_ip ?? t.remote_address;
    const status = Number(t.response?.http_code ?? record.response?.status);
    const messages = t.messages ?? record.audit_data?.messages ?? [];
    if (typeof client !== 'string' || !Array.isArray(messages) || messages.length === 0) return [];
    const ts = auditTime(String(t.time_stamp ?? t.time ?? ''));
    const blocked = status >= 400 && status < 600;
    if (!blocked && this.mode !== 'aggressive') return [];
    const id = t.unique_id ?? t.transaction_id;
    const attempts = this.transactions.attempts(typeof id === 'string' ? id : undefined);
    return this.hit(client, ts, readAt, blocked ? 'modsec_block' : 'modsec_alert', attempts);
  }

  private hit(client: string, ts: number, fallback: number, kind: string, attempts = 1): Detection[] {
    const ip = canonicalIp(stripPort(client));
    if (ip === undefined) {
      this.counters.hostNames++;
      return [];
    }
    this.counters.detections++;
    return [{ ts: Number.isFinite(ts) ? ts : fallback, ip, source: 'waf_log', kind, attempts }];
  }
}

interface AuditRecord {
  transaction?: {
    client_ip?: unknown;
    remote_address?: unknown;
    time_stamp?: unknown;
    time?: unknown;
    unique_id?: unknown;
    transaction_id?: unknown;
    response?: { http_code?: unknown };
    messages?: unknown[];
  };
  response?: { status?: unknown };
  audit_data?: { messages?: unknown[] };
}

/** `192.0.2.1:55555` → `192.0.2.1`, `[2001:db8::1]:443` → `2001:db8::1`; anything else as is. */
function stripPort(text: string): string {
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text);
  if (v4) return v4[1]!;
  const v6 = /^\[([^\]]+)\]:\d{1,5}$/.exec(text);
  return v6 ? v6[1]! : text;
}
