import {
  CreateNetworkAclEntryCommand,
  DeleteNetworkAclEntryCommand,
  DescribeNetworkAclsCommand,
  ReplaceNetworkAclEntryCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import { canonicalCidr } from '@rampart/plugin-kit';

/*
 * Deny entries in one VPC network ACL. The enforcer owns the ingress rule numbers
 * [first, first + slots); each slot holds one CIDR. Entries already in place keep their slot,
 * so a diff touches only the slots that change.
 */
export interface NetworkAclTarget {
  ec2: EC2Client;
  aclId: string;
  firstRule: number;
  slots: number;
}

/** The enforcer's slots as the ACL holds them now: rule number → canonical CIDR. */
export async function readSlots(t: NetworkAclTarget, signal?: AbortSignal): Promise<Map<number, string>> {
  const out = await t.ec2.send(new DescribeNetworkAclsCommand({ NetworkAclIds: [t.aclId] }), { abortSignal: signal });
  const acl = out.NetworkAcls?.[0];
  if (!acl) throw new Error(`network ACL ${t.aclId} not found`);
  const slots = new Map<number, string>();
  for (const e of acl.Entries ?? []) {
    const n = e.RuleNumber ?? -1;
    if (e.Egress || n < t.firstRule || n >= t.firstRule + t.slots || e.RuleAction !== 'deny' || !e.CidrBlock) continue;
    const cidr = canonicalCidr(e.CidrBlock);
    if (cidr) slots.set(n, cidr);
  }
  return slots;
}

/** Makes the slots hold exactly `cidrs` (at most `slots` of them); returns the API calls made. */
export async function converge(t: NetworkAclTarget, cidrs: string[], signal?: AbortSignal): Promise<number> {
  const current = await readSlots(t, signal);
  const want = new Set(cidrs.slice(0, t.slots));
  const keep = new Map<number, string>();
  const seen = new Set<string>();
  for (const [n, cidr] of current) {
    if (want.has(cidr) && !seen.has(cidr)) {
      keep.set(n, cidr);
      seen.add(cidr);
    }
  }
  const missing = [...want].filter((c) => !seen.has(c));
  const all = Array.from({ length: t.slots }, (_, i) => t.firstRule + i).filter((n) => !keep.has(n));
  // Reuse slots holding unwanted entries first (Replace), then empty ones (Create), then delete
  // what is left: the agent never holds more than `slots` entries, even between calls.
  const stale = all.filter((n) => current.has(n));
  const empty = all.filter((n) => !current.has(n));
  const entry = (n: number, cidr: string) => ({
    NetworkAclId: t.aclId,
    RuleNumber: n,
    Protocol: '-1',
    RuleAction: 'deny' as const,
    Egress: false,
    CidrBlock: cidr,
  });
  let calls = 0;
  while (missing.length > 0 && stale.length > 0) {
    await t.ec2.send(new ReplaceNetworkAclEntryCommand(entry(stale.shift()!, missing.shift()!)), { abortSignal: signal });
    calls += 1;
  }
  while (missing.length > 0 && empty.length > 0) {
    await t.ec2.send(new CreateNetworkAclEntryCommand(entry(empty.shift()!, missing.shift()!)), { abortSignal: signal });
    calls += 1;
  }
  for (const n of stale) {
    await t.ec2.send(new DeleteNetworkAclEntryCommand({ NetworkAclId: t.aclId, RuleNumber: n, Egress: false }), { abortSignal: signal });
    calls += 1;
  }
  return calls;
}
