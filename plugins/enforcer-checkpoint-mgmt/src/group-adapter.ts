import { z } from 'zod';
import { canonicalCidr, createEngineEnforcer, type BlockEntry, type Enforcer, type EnforcerAdapter, type PluginLogger } from '@rampart/plugin-kit';
import { CheckPointApiError } from './web-api.ts';
import { MgmtSession, type SessionSettings } from './session.ts';

export interface GroupAdapterOptions extends SessionSettings {
  /** The network group the operator's drop rule uses. */
  group: string;
  /** Policy package installed after a publish; empty: publish only. */
  policy: string;
  /** Gateways the policy is installed on. */
  targets: string[];
  /** Prefix of the names of the objects this enforcer owns (`rampart_203.0.113.7`). */
  prefix: string;
  /** Members per `set-group` call. */
  batchSize: number;
  capacity: number;
  log: PluginLogger;
}

/** Objects per page of `show-hosts`/`show-networks` (the API's maximum `limit`). */
const PAGE = 500;

const Member = z.object({
  name: z.string(),
  type: z.string(),
  'ipv4-address': z.string().optional(),
  subnet4: z.string().optional(),
  'mask-length4': z.number().optional(),
});
type Member = z.infer<typeof Member>;
const GroupReply = z.object({ members: z.array(z.union([Member, z.string()])).default([]) });
const Page = z.object({ objects: z.array(Member).default([]), to: z.number().optional(), total: z.number().default(0) });

/** `rampart_203.0.113.7` for a host, `rampart_10.0.0.0_8` for a network. */
export function objectName(prefix: string, cidr: string): string {
  const [ip, len] = cidr.split('/');
  return len === '32' ? `${prefix}${ip}` : `${prefix}${ip}_${len}`;
}

/** The CIDR an object of ours stands for, read from its address fields (not its name). */
function cidrOf(o: Member): string | undefined {
  if (o.type === 'host' && o['ipv4-address']) return canonicalCidr(o['ipv4-address']);
  if (o.type === 'network' && o.subnet4 && o['mask-length4'] !== undefined) return canonicalCidr(`${o.subnet4}/${o['mask-length4']}`);
  return undefined;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const notFound = (err: unknown) => err instanceof CheckPointApiError && err.apiCode === 'generic_err_object_not_found';

/**
 * A Check Point network group filled with host and network objects through the Management
 * Web API. Every write is one session: create the objects, change the group's members in
 * batches of `set-group members add/remove`, delete the objects the group no longer uses,
 * `publish`, then `install-policy`; any failure discards the session. Only objects whose
 * name starts with the prefix are ours; the operator's other members are never touched.
 */
export function groupAdapter(o: GroupAdapterOptions): EnforcerAdapter {
  /** Set when changes were published but the install failed: the next write installs again. */
  let installPending = false;

  /** Runs `work` in a read-write session, then publishes and installs what it changed. */
  async function write(work: (s: MgmtSession) => Promise<boolean>, signal?: AbortSignal): Promise<void> {
    const session = await MgmtSession.login(o, false, signal);
    try {
      const changed = await work(session);
      if (changed) {
        await session.runTask('publish', {}, signal);
        installPending = true;
      }
      if (installPending && o.policy) {
        await session.runTask(
          'install-policy',
          { 'policy-package': o.policy, targets: o.targets, access: true, 'threat-prevention': false },
          signal,
        );
      }
      installPending = false;
    } catch (err) {
      await session.abandon();
      throw err;
    }
    await session.end();
  }

  /** Our members of the group (name → CIDR), or undefined when the group does not exist. */
  async function members(s: MgmtSession, signal?: AbortSignal): Promise<Map<string, string> | undefined> {
    let reply;
    try {
      reply = GroupReply.parse(await s.call('show-group', { name: o.group, 'details-level': 'standard' }, signal));
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
    const ours = new Map<string, string>();
    for (const m of reply.members) {
      if (typeof m === 'string' || !m.name.startsWith(o.prefix)) continue;
      const cidr = cidrOf(m);
      if (cidr) ours.set(m.name, cidr);
    }
    return ours;
  }

  /** Every host and network object named with our prefix (name → CIDR), read page by page. */
  async function ownedObjects(s: MgmtSession, signal?: AbortSignal): Promise<Map<string, { type: string; cidr: string | undefined }>> {
    const owned = new Map<string, { type: string; cidr: string | undefined }>();
    for (const command of ['show-hosts', 'show-networks']) {
      for (let offset = 0; ; offset += PAGE) {
        const page = Page.parse(await s.call(command, { filter: o.prefix, limit: PAGE, offset, 'details-level': 'standard' }, signal));
        for (const obj of page.objects) if (obj.name.startsWith(o.prefix)) owned.set(obj.name, { type: obj.type, cidr: cidrOf(obj) });
        if (page.objects.length === 0 || offset + PAGE >= page.total) break;
      }
    }
    return owned;
  }

  async function addObject(s: MgmtSession, cidr: string, signal?: AbortSignal): Promise<void> {
    const [ip, len] = cidr.split('/');
    const name = objectName(o.prefix, cidr);
    // ignore-warnings: another object with the same address is a warning, not a reason to stop.
    if (len === '32') await s.call('add-host', { name, 'ip-address': ip, 'ignore-warnings': true }, signal);
    else await s.call('add-network', { name, subnet: ip, 'mask-length': Number(len), 'ignore-warnings': true }, signal);
  }

  async function deleteObject(s: MgmtSession, name: string, type: string, signal?: AbortSignal): Promise<void> {
    await s.call(type === 'network' ? 'delete-network' : 'delete-host', { name, 'ignore-warnings': true }, signal);
  }

  async function setMembers(s: MgmtSession, op: 'add' | 'remove', names: string[], signal?: AbortSignal): Promise<void> {
    for (const batch of chunks(names, o.batchSize)) await s.call('set-group', { name: o.group, members: { [op]: batch } }, signal);
  }

  /** Deletes owned objects the group no longer uses; one in use elsewhere is kept and logged. */
  async function deleteUnused(s: MgmtSession, owned: Map<string, { type: string }>, keep: Set<string>, signal?: AbortSignal): Promise<boolean> {
    let changed = false;
    for (const [name, { type }] of owned) {
      if (keep.has(name)) continue;
      try {
        await deleteObject(s, name, type, signal);
        changed = true;
      } catch (err) {
        if (signal?.aborted || !(err instanceof CheckPointApiError)) throw err;
        o.log.warn({ err, object: name }, 'object kept: the server refused to delete it');
      }
    }
    return changed;
  }

  return {
    async read(signal?: AbortSignal) {
      const session = await MgmtSession.login(o, true, signal);
      try {
        return [...((await members(session, signal)) ?? new Map()).values()];
      } finally {
        await session.end();
      }
    },

    // The diff against the server's state, in one session: nothing enforced is removed first.
    async replaceAll(entries: readonly BlockEntry[], signal?: AbortSignal) {
      await write(async (s) => {
        const existing = await members(s, signal);
        if (!existing) await s.call('add-group', { name: o.group }, signal);
        const current = existing ?? new Map<string, string>();
        let changed = !existing;
        const owned = await ownedObjects(s, signal);
        const wanted = new Map(entries.map((e) => [objectName(o.prefix, e.value), e.value]));
        // A member that is unwanted, or one of our names holding another address (edited by
        // hand), leaves the group first, so that the object can be deleted or made again.
        const remove = [...current.keys()].filter((n) => current.get(n) !== wanted.get(n));
        await setMembers(s, 'remove', remove, signal);
        for (const [name, cidr] of wanted) {
          const have = owned.get(name);
          if (have?.cidr === cidr) continue;
          if (have) await deleteObject(s, name, have.type, signal);
          await addObject(s, cidr, signal);
          changed = true;
        }
        const add = [...wanted.keys()].filter((n) => current.get(n) !== wanted.get(n));
        await setMembers(s, 'add', add, signal);
        const deleted = await deleteUnused(s, owned, new Set(wanted.keys()), signal);
        return changed || deleted || add.length > 0 || remove.length > 0;
      }, signal);
    },

    async applyBatch(change, _all, signal?: AbortSignal) {
      await write(async (s) => {
        for (const e of change.add) await addObject(s, e.value, signal);
        const removed = change.remove.map((cidr) => objectName(o.prefix, cidr));
        await setMembers(s, 'remove', removed, signal);
        await setMembers(s, 'add', change.add.map((e) => objectName(o.prefix, e.value)), signal);
        const types = new Map(change.remove.map((cidr) => [objectName(o.prefix, cidr), cidr.endsWith('/32') ? 'host' : 'network']));
        await deleteUnused(s, new Map([...types].map(([name, type]) => [name, { type }])), new Set(), signal);
        return change.add.length > 0 || change.remove.length > 0;
      }, signal);
    },

    async removeAll(signal?: AbortSignal) {
      await write(async (s) => {
        const current = await members(s, signal);
        if (current) await setMembers(s, 'remove', [...current.keys()], signal);
        const deleted = await deleteUnused(s, await ownedObjects(s, signal), new Set(), signal);
        return (current?.size ?? 0) > 0 || deleted;
      }, signal);
    },

    async probe(signal?: AbortSignal) {
      const session = await MgmtSession.login(o, true, signal);
      await session.end();
    },

    close: async () => o.transport.close(),
  };
}

export function createGroupEnforcer(o: GroupAdapterOptions): Enforcer {
  return createEngineEnforcer(groupAdapter(o), { capacity: o.capacity, log: o.log });
}
