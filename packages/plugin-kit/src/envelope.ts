/**
 * The envelope of a system log line: when, which host, which program, which process, and the
 * program's message. Understands the formats `ssh_log` and `packet_filter` sources meet:
 * BSD syslog (`Jun  5 01:02:03 host sshd[12]: …`, optional fractional seconds as journalctl
 * `short-precise` writes them), ISO-timestamped syslog (`2015-04-16T18:02:50.32+00:00 host …`,
 * rsyslog high precision and journalctl `short-iso`), RFC 5424 (`<38>1 2019-07-08T17:40:16Z host
 * sshd 57915 - - …`) and journald JSON export lines (`journalctl -o json`). The multi-line
 * `journalctl -o export` format is assembled by `JournalExportAssembler`.
 */
export interface Envelope {
  /** Epoch seconds. */
  ts: number;
  host: string;
  program: string;
  pid: string;
  message: string;
}

const MONTHS: Record<string, number> = {
  Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11,
};

// host: a token that is neither a bracketed program nor `prog[pid]:`; program: `prog`, `prog[pid]`,
// `[prog]`, `prog(pam)`; Solaris adds `[ID n facility.level]`; fail2ban's `<auth.info>` prefix too.
const TAIL = String.raw` +(?:<[^.\s>]+\.[^.\s>]+> +)?(?:(?![\[(])(?!\S*:(?: |$))(\S+) +)?[\[(]?([^\s\[\]():]+)(?:\(\S+\))?[\])]?(?:\[(\d+)\])?:?(?: +\[ID \d+ \S+\])?(?: +|$)(.*)$`;
// The TAIL alone, from the space after a fixed-width BSD timestamp (the `fastBsd` path).
const TAIL_Y = new RegExp(TAIL, 'y');
const BSD_RE = new RegExp(String.raw`^(?:<\d{1,3}>)?([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)(?:\.\d{1,9})?` + TAIL);
const ISO_RE = new RegExp(String.raw`^(?:<\d{1,3}>)?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)` + TAIL);
// RFC 5424: PRI VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA [MSG]
const RFC5424_RE =
  /^<\d{1,3}>1 (\S+) (\S+) (\S+) (\S+) \S+ (-|(?:\[(?:[^\]"]|"(?:[^"\\]|\\.)*")*\])+)(?: (?:\uFEFF)?(.*))?$/;

/**
 * Parses envelopes; keeps a small cache so that the year inference and the date arithmetic of
 * BSD timestamps run once per minute of log rather than once per line.
 */
export class EnvelopeParser {
  private minuteKey = '';
  private minuteEpoch = 0;
  /** The first 12 characters (`Mar  1 00:00`) of the last fixed-width BSD line, and its minute. */
  private fastKey = '';
  private fastEpoch = 0;

  /**
   * `readAt` (epoch seconds) anchors year-less BSD timestamps: the year is the one that puts the
   * line at most two days after `readAt` (logs are read after they are written, rotation keeps
   * them for weeks). BSD and zone-less ISO timestamps are in the agent's local time zone.
   */
  parse(line: string, readAt: number): Envelope | undefined {
    const first = line.charCodeAt(0);
    if (first === 123 /* { */) return parseJournalJson(line);
    if (first === 60 /* < */ && line.charCodeAt(line.indexOf('>') + 1) === 49 /* 1 */ && line.charCodeAt(line.indexOf('>') + 2) === 32) {
      return this.parseRfc5424(line);
    }
    if (first >= 48 && first <= 57) return this.parseIso(line);
    if (fixedWidthBsd(line)) return this.fastBsd(line, readAt);
    const m = BSD_RE.exec(line);
    if (!m) return first === 60 ? this.parseIso(line) : undefined;
    const month = MONTHS[m[1]!];
    if (month === undefined) return undefined;
    const key = `${m[1]} ${m[2]} ${m[3]}:${m[4]}`;
    if (key !== this.minuteKey || readAt < this.minuteEpoch - 2 * 86_400) {
      this.minuteKey = key;
      this.minuteEpoch = minuteEpoch(month, Number(m[2]), Number(m[3]), Number(m[4]), readAt);
    }
    return { ts: this.minuteEpoch + Number(m[5]), host: m[6] ?? '', program: m[7]!, pid: m[8] ?? '', message: m[9]! };
  }

  /**
   * What BSD_RE gives for a line whose first 15 characters are `Mmm dd hh:mm:ss` in fixed width
   * (no priority, one or two spaces before the day, no fraction): the stamp can be read only one
   * way, so only the TAIL is matched, and the minute is reused while the line's first 12
   * characters stay the same (no date captures or key built per line).
   */
  private fastBsd(line: string, readAt: number): Envelope | undefined {
    let host: string;
    let program: string;
    let pid: string;
    let message: string;
    const tail = plainTail(line);
    if (tail !== 0) {
      const hostEnd = tail & 0x3ff;
      const programEnd = (tail >>> 10) & 0x3ff;
      const pidEnd = tail >>> 20;
      host = line.slice(16, hostEnd);
      program = line.slice(hostEnd + 1, programEnd);
      pid = line.slice(programEnd + 1, pidEnd);
      let at = pidEnd + 1;
      if (line.charCodeAt(at) === 58 /* : */) at++;
      while (line.charCodeAt(at) === 32) at++;
      message = line.slice(at);
    } else {
      TAIL_Y.lastIndex = 15;
      const m = TAIL_Y.exec(line);
      if (!m) return undefined;
      host = m[1] ?? '';
      program = m[2]!;
      pid = m[3] ?? '';
      message = m[4]!;
    }
    if (!line.startsWith(this.fastKey) || this.fastKey === '' || readAt < this.fastEpoch - 2 * 86_400) {
      const month = MONTHS[line.slice(0, 3)];
      if (month === undefined) return undefined;
      const day = line.charCodeAt(4) === 32 ? digit(line, 5) : digit(line, 4) * 10 + digit(line, 5);
      this.fastKey = line.slice(0, 12);
      this.fastEpoch = minuteEpoch(month, day, digit(line, 7) * 10 + digit(line, 8), digit(line, 10) * 10 + digit(line, 11), readAt);
    }
    const seconds = digit(line, 13) * 10 + digit(line, 14);
    return { ts: this.fastEpoch + seconds, host, program, pid, message };
  }

  private parseIso(line: string): Envelope | undefined {
    const m = ISO_RE.exec(line);
    if (!m) return undefined;
    const ts = Date.parse(m[1]!) / 1000;
    if (!Number.isFinite(ts)) return undefined;
    return { ts, host: m[2] ?? '', program: m[3]!, pid: m[4] ?? '', message: m[5]! };
  }

  private parseRfc5424(line: string): Envelope | undefined {
    const m = RFC5424_RE.exec(line);
    if (!m) return undefined;
    const ts = m[1] === '-' ? Number.NaN : Date.parse(m[1]!) / 1000;
    return {
      ts: Number.isFinite(ts) ? ts : Number.NaN,
      host: m[2] === '-' ? '' : m[2]!,
      program: m[3] === '-' ? '' : m[3]!,
      pid: m[4] === '-' ? '' : m[4]!,
      message: m[6] ?? '',
    };
  }
}

function digit(line: string, at: number): number {
  return line.charCodeAt(at) - 48;
}

const isDigit = (c: number) => c >= 48 && c <= 57;

/** `Mmm dd hh:mm:ss` (day `dd` or ` d`) not followed by a fraction: BSD_RE reads it only one way. */
export function fixedWidthBsd(line: string): boolean {
  const c0 = line.charCodeAt(0);
  const c1 = line.charCodeAt(1);
  const c2 = line.charCodeAt(2);
  const c4 = line.charCodeAt(4);
  return (
    c0 >= 65 && c0 <= 90 && c1 >= 97 && c1 <= 122 && c2 >= 97 && c2 <= 122 &&
    line.charCodeAt(3) === 32 && (c4 === 32 || isDigit(c4)) && isDigit(line.charCodeAt(5)) && line.charCodeAt(6) === 32 &&
    isDigit(line.charCodeAt(7)) && isDigit(line.charCodeAt(8)) && line.charCodeAt(9) === 58 &&
    isDigit(line.charCodeAt(10)) && isDigit(line.charCodeAt(11)) && line.charCodeAt(12) === 58 &&
    isDigit(line.charCodeAt(13)) && isDigit(line.charCodeAt(14)) && line.charCodeAt(15) !== 46
  );
}

const LINE_TERMINATOR_RE = /[\r\u2028\u2029]/;

/**
 * The most common tail, `Mmm dd hh:mm:ss host prog[pid]: message` with one space after the stamp,
 * the host and the program, read without the TAIL regex, where it can only read it the same way:
 * the host a token of printable ASCII not ending in ':' (nor starting with '[', '(' or '<'), the
 * program printable ASCII without `[]():`, the pid digits in brackets, then ':' or not, spaces or
 * the end, a message not starting with '[' (a Solaris `[ID …]`) and no line terminator anywhere
 * (`.` stops at those). Returns the ends of host, program and pid packed in one number (each
 * below 1024), or 0 when the regex must read the line.
 */
export function plainTail(line: string): number {
  if (line.charCodeAt(15) !== 32) return 0;
  let i = 16;
  let c = line.charCodeAt(i);
  if (c === 91 /* [ */ || c === 40 /* ( */ || c === 60 /* < */) return 0;
  while (c >= 33 && c <= 126) c = line.charCodeAt(++i);
  const hostEnd = i;
  if (c !== 32 || hostEnd === 16 || line.charCodeAt(hostEnd - 1) === 58 /* : */) return 0;
  c = line.charCodeAt(++i);
  if (c === 91 || c === 40) return 0;
  while (c >= 33 && c <= 126 && c !== 91 && c !== 93 && c !== 40 && c !== 41 && c !== 58) c = line.charCodeAt(++i);
  const programEnd = i;
  if (c !== 91 || programEnd === hostEnd + 1) return 0;
  c = line.charCodeAt(++i);
  while (c >= 48 && c <= 57) c = line.charCodeAt(++i);
  const pidEnd = i;
  if (c !== 93 /* ] */ || pidEnd === programEnd + 1) return 0;
  c = line.charCodeAt(++i);
  if (c === 58) c = line.charCodeAt(++i);
  if (i < line.length && c !== 32) return 0;
  while (c === 32) c = line.charCodeAt(++i);
  if (c === 91 || pidEnd >= 1024 || LINE_TERMINATOR_RE.test(line)) return 0;
  return hostEnd | (programEnd << 10) | (pidEnd << 20);
}

function minuteEpoch(month: number, day: number, hour: number, minute: number, readAt: number): number {
  const year = new Date(readAt * 1000).getFullYear();
  let epoch = new Date(year, month, day, hour, minute, 0).getTime() / 1000;
  if (epoch > readAt + 2 * 86_400) epoch = new Date(year - 1, month, day, hour, minute, 0).getTime() / 1000;
  return epoch;
}

/** One `journalctl -o json` line. `MESSAGE` given as a byte array (non-UTF-8) is decoded. */
export function parseJournalJson(line: string): Envelope | undefined {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof record !== 'object' || record === null) return undefined;
  return journalFields(record as Record<string, unknown>);
}

function journalFields(fields: Record<string, unknown>): Envelope | undefined {
  let message = fields.MESSAGE;
  if (Array.isArray(message)) message = Buffer.from(message.filter((b): b is number => typeof b === 'number')).toString('utf8');
  if (typeof message !== 'string') return undefined;
  const micros = Number(fields.__REALTIME_TIMESTAMP ?? fields._SOURCE_REALTIME_TIMESTAMP);
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  return {
    ts: Number.isFinite(micros) ? Math.floor(micros / 1000) / 1000 : Number.NaN,
    host: text(fields._HOSTNAME),
    // Trusted fields first: journald sets _COMM and _TRANSPORT itself, while any local user can
    // choose SYSLOG_IDENTIFIER (`logger -t sshd "Failed password … from <victim>"`).
    program: fields._TRANSPORT === 'kernel' ? 'kernel' : text(fields._COMM) || text(fields.SYSLOG_IDENTIFIER),
    pid: text(fields._PID) || text(fields.SYSLOG_PID),
    message,
  };
}

/**
 * `journalctl -o export` writes one `KEY=VALUE` line per field and a blank line after each
 * entry. Feed it every line; it returns the envelope when an entry ends and `null` for lines
 * that belong to an entry, `undefined` for lines that are not export lines at all.
 */
export class JournalExportAssembler {
  private fields: Record<string, string> | undefined;

  push(line: string): Envelope | null | undefined {
    if (this.fields === undefined) {
      if (!line.startsWith('__CURSOR=')) return undefined;
      this.fields = {};
    }
    if (line === '') return this.end() ?? null;
    const eq = line.indexOf('=');
    // Binary fields (no '=' on the name line) carry no text we use; their length-prefixed data
    // cannot be split by lines, so the entry is dropped.
    if (eq <= 0) {
      this.fields = undefined;
      return null;
    }
    if (Object.keys(this.fields).length < 200) this.fields[line.slice(0, eq)] = line.slice(eq + 1);
    return null;
  }

  /** Ends a pending entry (end of input without the final blank line). */
  end(): Envelope | undefined {
    const fields = this.fields;
    this.fields = undefined;
    return fields ? journalFields(fields) : undefined;
  }
}
