import { canonicalCidr, sortCidrs } from '@rampart/plugin-kit';

/*
 * Cisco IOS / IOS-XE text: the lines this enforcer types and the parsing of the `show` output it
 * reads back (formats from Cisco's command references; transcripts in test/fixtures/). Names it
 * interpolates are validated by the config schema and addresses come canonical from the engine,
 * so nothing untrusted reaches the CLI.
 */

/**
 * IOS prints a refused command's reason on a line starting with `%` (`% Invalid input detected
 * at '^' marker.`, `% Incomplete command.`). A syslog message shown on the terminal
 * (`%SYS-5-CONFIG_I: Configured from console…`, with `terminal monitor` and no time stamps) is
 * not a refusal.
 */
export const IOS_ERROR = /^\s*%(?![A-Z0-9_]+-\d-[A-Z0-9_]+:)/;

function prefixOf(cidr: string): { address: string; prefix: number } {
  const [address, prefix] = cidr.split('/');
  return { address: address!, prefix: Number(prefix) };
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

function dotted(n: number): string {
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
}

function bitsOf(dottedMask: string): number | undefined {
  const parts = dottedMask.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return undefined;
  return (((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0);
}

/** The prefix length of a contiguous netmask (`255.255.255.0` → 24), else undefined. */
export function prefixOfMask(mask: string): number | undefined {
  const n = bitsOf(mask);
  if (n === undefined) return undefined;
  for (let p = 0; p <= 32; p++) if (maskOf(p) === n) return p;
  return undefined;
}

/** A network object-group member line: `host A.B.C.D` or `A.B.C.D MASK`. */
export function groupMember(cidr: string): string {
  const { address, prefix } = prefixOf(cidr);
  return prefix === 32 ? `host ${address}` : `${address} ${dotted(maskOf(prefix))}`;
}

/** A standard ACL's source: `A.B.C.D WILDCARD` (the wildcard is the inverted mask). */
export function standardSource(cidr: string): string {
  const { address, prefix } = prefixOf(cidr);
  return `${address} ${dotted(~maskOf(prefix) >>> 0)}`;
}

/**
 * Members of `show object-group name <NAME>` as canonical CIDRs (sorted):
 * `Network object group NAME` then ` host A.B.C.D` / ` A.B.C.D MASK` lines. Members this
 * enforcer never writes (`range`, `any`, nested `group-object`) are not read as entries.
 */
export function parseObjectGroup(output: string): string[] {
  const out: string[] = [];
  for (const line of output.split('\n')) {
    let m = /^\s+host\s+(\d{1,3}(?:\.\d{1,3}){3})\s*$/.exec(line);
    if (m) {
      const cidr = canonicalCidr(m[1]!);
      if (cidr) out.push(cidr);
      continue;
    }
    m = /^\s+(\d{1,3}(?:\.\d{1,3}){3})\s+(\d{1,3}(?:\.\d{1,3}){3})\s*$/.exec(line);
    const prefix = m ? prefixOfMask(m[2]!) : undefined;
    const cidr = m && prefix !== undefined ? canonicalCidr(`${m[1]}/${prefix}`) : undefined;
    if (cidr) out.push(cidr);
  }
  return sortCidrs(out);
}

/** Whether `show object-group name <NAME>` found the group. */
export function groupExists(output: string, name: string): boolean {
  return output.split('\n').some((l) => l.trim() === `Network object group ${name}`);
}

export interface AclEntry {
  seq: number;
  /** The entry as IOS prints it, without the sequence number and the match counter. */
  text: string;
}

/**
 * Entries of `show ip access-lists <ACL>`: a header (`Extended IP access list NAME`,
 * `Standard IP access list 10`) then `    <seq> <entry> [(N matches)]` lines.
 */
export function parseAccessList(output: string): AclEntry[] {
  const out: AclEntry[] = [];
  for (const line of output.split('\n')) {
    const m = /^\s+(\d+)\s+(.*?)(?:\s+\(\d+ matches?\))?\s*$/.exec(line);
    if (m) out.push({ seq: Number(m[1]), text: m[2]!.replace(/\s+/g, ' ') });
  }
  return out;
}

/** The `deny ip object-group <group> any` entries of an extended ACL, with their group. */
export function groupDenies(entries: AclEntry[], groups: readonly string[]): { seq: number; group: string }[] {
  return entries.flatMap((e) => {
    const m = /^deny ip object-group (\S+) any$/.exec(e.text);
    return m && groups.includes(m[1]!) ? [{ seq: e.seq, group: m[1]! }] : [];
  });
}

/**
 * The deny entries of a standard ACL as canonical CIDRs: `deny 192.0.2.7` (a host),
 * `deny 198.51.100.0, wildcard bits 0.0.0.255`, also `deny host A` / `deny A WILDCARD`.
 */
export function standardDenies(entries: AclEntry[]): { seq: number; cidr: string }[] {
  return entries.flatMap((e) => {
    const m = /^deny (?:host )?(\d{1,3}(?:\.\d{1,3}){3})(?:,? (?:wildcard bits )?(\d{1,3}(?:\.\d{1,3}){3}))?(?: log)?$/.exec(e.text);
    if (!m) return [];
    const wildcard = m[2] ? bitsOf(m[2]) : 0;
    const prefix = wildcard === undefined ? undefined : prefixOfMask(dotted(~wildcard >>> 0));
    const cidr = prefix === undefined ? undefined : canonicalCidr(`${m[1]}/${prefix}`);
    return cidr ? [{ seq: e.seq, cidr }] : [];
  });
}
