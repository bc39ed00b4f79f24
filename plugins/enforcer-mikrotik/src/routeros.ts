import { canonicalCidr, cidrToListForm, sortCidrs } from '@rampart/plugin-kit';

/*
 * The RouterOS CLI commands this enforcer sends, and the parsing of their `print terse` output.
 * Names and values it interpolates are validated (list names by the config schema, addresses
 * by canonicalCidr), so no quoting of untrusted text happens here.
 */

/** `key=value` pairs of one `print terse` line; values may be double-quoted. */
export function terseFields(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of line.matchAll(/([a-z0-9.-]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const raw = m[2]!;
    out[m[1]!] = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw;
  }
  return out;
}

export function parseAddressList(output: string): string[] {
  const out: string[] = [];
  for (const line of output.split('\n')) {
    const address = terseFields(line).address;
    const cidr = address ? canonicalCidr(address) : undefined;
    if (cidr) out.push(cidr);
  }
  return sortCidrs(out);
}

export interface DropRule {
  chain: string;
  list: string;
}

export function parseDropRules(output: string): DropRule[] {
  return output
    .split('\n')
    .map(terseFields)
    .filter((f) => f.chain && f['src-address-list'] !== undefined)
    .map((f) => ({ chain: f.chain!, list: f['src-address-list']! }));
}

export const ros = {
  printRules: (comment: string) => `/ip firewall filter print terse without-paging where comment="${comment}"`,
  countRules: () => '/ip firewall filter print count-only',
  addRule: (chain: string, list: string, comment: string, first: boolean) =>
    `/ip firewall filter add chain=${chain} action=drop src-address-list=${list} comment="${comment}"${first ? ' place-before=0' : ''}`,
  repoint: (comment: string, list: string) => `/ip firewall filter set [find comment="${comment}"] src-address-list=${list}`,
  removeRules: (comment: string) => `/ip firewall filter remove [find comment="${comment}"]`,
  printList: (list: string) => `/ip firewall address-list print terse without-paging where list="${list}"`,
  add: (list: string, cidr: string) => `/ip firewall address-list add list=${list} address=${cidrToListForm(cidr)} comment="rampart"`,
  remove: (list: string, cidr: string) => `/ip firewall address-list remove [find list="${list}" address="${cidrToListForm(cidr)}"]`,
  clearList: (list: string) => `/ip firewall address-list remove [find list="${list}"]`,
};

/** RouterOS reports a failed command in its output (the exit status says nothing). */
export function routerOsError(output: string): string | undefined {
  const line = output
    .split('\n')
    .find((l) => /^(failure:|syntax error|bad command name|expected |no such item|input does not match|invalid value)/.test(l.trim()));
  return line?.trim();
}
