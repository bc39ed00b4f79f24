import {
  CreateIPSetCommand,
  GetIPSetCommand,
  ListIPSetsCommand,
  UpdateIPSetCommand,
  WAFOptimisticLockException,
  type Scope,
  type WAFV2Client,
} from '@aws-sdk/client-wafv2';
import { canonicalCidr } from '@rampart/plugin-kit';
import type { WriteGate } from './write-gate.ts';
import { IP_SET_ADDRESSES } from './limits.ts';

export { IP_SET_ADDRESSES };

/*
 * The list sharded over the IP sets `<prefix>-0` … `<prefix>-<shards-1>`, all created up front so
 * that the web ACL rules referencing them never change. Each set is replaced whole with its
 * lock token (UpdateIPSet is atomic per set); an address keeps its shard across diffs, so a diff
 * rewrites only the sets it touches. Writes pass through a gate (one per second by default).
 */
export interface IpSetsTarget {
  waf: WAFV2Client;
  scope: Scope;
  prefix: string;
  shards: number;
  gate: WriteGate;
}

interface Shard {
  name: string;
  id: string;
  lockToken: string;
  addresses: string[];
}

async function listAll(t: IpSetsTarget, signal?: AbortSignal): Promise<Map<string, { id: string; lockToken: string }>> {
  const found = new Map<string, { id: string; lockToken: string }>();
  let marker: string | undefined;
  do {
    const page = await t.waf.send(new ListIPSetsCommand({ Scope: t.scope, Limit: 100, NextMarker: marker }), { abortSignal: signal });
    for (const s of page.IPSets ?? []) if (s.Name && s.Id) found.set(s.Name, { id: s.Id, lockToken: s.LockToken ?? '' });
    marker = page.IPSets?.length ? page.NextMarker : undefined;
  } while (marker);
  return found;
}

const shardName = (t: IpSetsTarget, i: number) => `${t.prefix}-${i}`;

/** Reads every shard (creating missing ones when `create`); absent shards read as empty. */
export async function readShards(t: IpSetsTarget, create: boolean, signal?: AbortSignal): Promise<(Shard | undefined)[]> {
  const existing = await listAll(t, signal);
  const shards: (Shard | undefined)[] = [];
  for (let i = 0; i < t.shards; i++) {
    const name = shardName(t, i);
    const known = existing.get(name);
    if (known) {
      const got = await t.waf.send(new GetIPSetCommand({ Name: name, Scope: t.scope, Id: known.id }), { abortSignal: signal });
      shards.push({ name, id: known.id, lockToken: got.LockToken ?? '', addresses: got.IPSet?.Addresses ?? [] });
    } else if (create) {
      await t.gate.wait(signal);
      const made = await t.waf.send(
        new CreateIPSetCommand({ Name: name, Scope: t.scope, IPAddressVersion: 'IPV4', Addresses: [], Description: 'Rampart block list shard (managed)' }),
        { abortSignal: signal },
      );
      shards.push({ name, id: made.Summary!.Id!, lockToken: made.Summary!.LockToken!, addresses: [] });
    } else shards.push(undefined);
  }
  return shards;
}

export async function readAddresses(t: IpSetsTarget, signal?: AbortSignal): Promise<string[]> {
  return (await readShards(t, false, signal)).flatMap((s) => (s?.addresses ?? []).map((a) => canonicalCidr(a)).filter((c): c is string => !!c));
}

/** Makes the shards hold exactly `cidrs` (≤ shards × 10,000); returns the UpdateIPSet calls made. */
export async function convergeShards(t: IpSetsTarget, cidrs: string[], signal?: AbortSignal): Promise<number> {
  const shards = (await readShards(t, true, signal)) as Shard[];
  const want = new Set(cidrs);
  const placed = new Set<string>();
  const next = shards.map((s) =>
    s.addresses
      .map((a) => canonicalCidr(a))
      .filter((c): c is string => !!c && want.has(c) && !placed.has(c) && (placed.add(c), true)),
  );
  for (const cidr of cidrs) {
    if (placed.has(cidr)) continue;
    const target = next.find((n) => n.length < IP_SET_ADDRESSES);
    if (!target) break;
    target.push(cidr);
    placed.add(cidr);
  }
  let writes = 0;
  for (let i = 0; i < shards.length; i++) {
    const shard = shards[i]!;
    const addresses = next[i]!;
    const before = shard.addresses.map((a) => canonicalCidr(a) ?? a).sort();
    if (before.length === addresses.length && [...addresses].sort().every((a, j) => a === before[j])) continue;
    await update(t, shard, addresses, signal);
    writes += 1;
  }
  return writes;
}

/** UpdateIPSet with the set's lock token; a concurrent change (stale token) is re-read once. */
async function update(t: IpSetsTarget, shard: Shard, addresses: string[], signal?: AbortSignal): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    await t.gate.wait(signal);
    try {
      await t.waf.send(new UpdateIPSetCommand({ Name: shard.name, Scope: t.scope, Id: shard.id, Addresses: addresses, LockToken: shard.lockToken }), { abortSignal: signal });
      return;
    } catch (err) {
      if (!(err instanceof WAFOptimisticLockException) || attempt > 0) throw err;
      const fresh = await t.waf.send(new GetIPSetCommand({ Name: shard.name, Scope: t.scope, Id: shard.id }), { abortSignal: signal });
      shard.lockToken = fresh.LockToken ?? '';
    }
  }
}
