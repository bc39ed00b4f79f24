import { z } from 'zod';
import { canonicalCidr, createEngineEnforcer, type BlockEntry, type Enforcer, type EnforcerAdapter, type PluginLogger, type TargetChange } from '@rampart/plugin-kit';
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

type Owned = Map<string, { type: string; cidr?: string | undefined }>;

/**
 * A Check Point network group filled with host and network objects through the Management
 * Web API. Every write is one session: create the objects, change the group's members in
 * batches of `set-group members add/remove`, delete the objects the group no longer uses,
 * `publish`, then `install-policy`; any failure discards the session. Only objects whose
 * name starts with the prefix are ours; the operator's other members are never touched.
 */
class GroupTarget implements EnforcerAdapter {
  readonly #o: GroupAdapterOptions;
  /** Set when changes were published but not installed: the next write installs again. */
  #installPending = false;

  constructor(o: GroupAdapterOptions) {
    this.#o = o;
  }

  async read(signal?: AbortSignal): Promise<string[]> {
    const session = await MgmtSession.login(this.#o, true, signal);
    try {
      return [...((await this.#members(session, signal)) ?? new Map<string, string>()).values()];
    } finally {
      await session.end();
    }
  }

  /** The diff against the server's state, in one session: nothing enforced is removed first. */
  replaceAll(entries: readonly BlockEntry[], signal?: AbortSignal): Promise<void> {
    const prefix = this.#o.prefix;
    return this.#write(async (s) => {
      const existing = await this.#members(s, signal);
      if (!existing) await s.call('add-group', { name: this.#o.group }, signal);
      const current = existing ?? new Map<string, string>();
      let changed = !existing;
      const owned = await this.#ownedObjects(s, signal);
      const wanted = new Map(entries.map((e) => [objectName(prefix, e.value), e.value]));
      // A member that is unwanted, or one of our names holding another address (edited by
      // hand), leaves the group first, so that the object can be deleted or made again.
      const remove = [...current.keys()].filter((n) => current.get(n) !== wanted.get(n));
      await this.#setMembers(s, 'remove', remove, signal);
      for (const [name, cidr] of wanted) {
        const have = owned.get(name);
        if (have?.cidr === cidr) continue;
        if (have) await this.#deleteObject(s, name, have.type, signal);
        await this.#addObject(s, cidr, signal);
        changed = true;
      }
      const add = [...wanted.keys()].filter((n) => current.get(n) !== wanted.get(n));
      await this.#setMembers(s, 'add', add, signal);
      const deleted = await this.#deleteUnused(s, owned, new Set(wanted.keys()), signal);
      return changed || deleted || add.length > 0 || remove.length > 0;
    }, signal);
  }

  applyBatch(change: TargetChange, _all: () => BlockEntry[], signal?: AbortSignal): Promise<void> {
    const prefix = this.#o.prefix;
    return this.#write(async (s) => {
      for (const e of change.add) await this.#addObject(s, e.value, signal);
      await this.#setMembers(s, 'remove', change.remove.map((cidr) => objectName(prefix, cidr)), signal);
      await this.#setMembers(s, 'add', change.add.map((e) => objectName(prefix, e.value)), signal);
      const removed: Owned = new Map(change.remove.map((cidr) => [objectName(prefix, cidr), { type: cidr.endsWith('/32') ? 'host' : 'network' }]));
      await this.#deleteUnused(s, removed, new Set(), signal);
      return change.add.length > 0 || change.remove.length > 0;
    }, signal);
  }

  removeAll(signal?: AbortSignal): Promise<void> {
    return this.#write(async (s) => {
      const current = await this.#members(s, signal);
      if (current) await this.#setMembers(s, 'remove', [...current.keys()], signal);
      const deleted = await this.#deleteUnused(s, await this.#ownedObjects(s, signal), new Set(), signal);
      return (current?.size ?? 0) > 0 || deleted;
    }, signal);
  }

  async probe(signal?: AbortSignal): Promise<void> {
    const session = await MgmtSession.login(this.#o, true, signal);
    await session.end();
  }

  async close(): Promise<void> {
    this.#o.transport.close();
  }

  /** Runs `work` in a read-write session, then publishes and installs what it changed. */
  async #write(work: (s: MgmtSession) => Promise<boolean>, signal?: AbortSignal): Promise<void> {
    const o = this.#o;
    const session = await MgmtSession.login(o, false, signal);
    try {
      if (await work(session)) {
        await session.runTask('publish', {}, signal);
        this.#installPending = true;
      }
      if (this.#installPending && o.policy) {
        const body = { 'policy-package': o.policy, targets: o.targets, access: true, 'threat-prevention': false };
        await session.runTask('install-policy', body, signal);
      }
      this.#installPending = false;
    } catch (err) {
      await session.abandon();
      throw err;
    }
    await session.end();
  }

  /** Our members of the group (name → CIDR), or undefined when the group does not exist. */
  async #members(s: MgmtSession, signal?: AbortSignal): Promise<Map<string, string> | undefined> {
    let reply;
    try {
      reply = GroupReply.parse(await s.call('show-group', { name: this.#o.group, 'details-level': 'standard' }, signal));
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
    const ours = new Map<string, string>();
    for (const m of reply.members) {
      if (typeof m === 'string' || !m.name.startsWith(this.#o.prefix)) continue;
      const cidr = cidrOf(m);
      if (cidr) ours.set(m.name, cidr);
    }
    return ours;
  }

  /** Every host and network object named with our prefix, read page by page. */
  async #ownedObjects(s: MgmtSession, signal?: AbortSignal): Promise<Owned> {
    const prefix = this.#o.prefix;
    const owned: Owned = new Map();
    for (const command of ['show-hosts', 'show-networks']) {
      for (let offset = 0; ; offset += PAGE) {
        const page = Page.parse(await s.call(command, { filter: prefix, limit: PAGE, offset, 'details-level': 'standard' }, signal));
        for (const obj of page.objects) if (obj.name.startsWith(prefix)) owned.set(obj.name, { type: obj.type, cidr: cidrOf(obj) });
        if (page.objects.length === 0 || offset + PAGE >= page.total) break;
      }
    }
    return owned;
  }

  async #addObject(s: MgmtSession, cidr: string, signal?: AbortSignal): Promise<void> {
    const [ip, len] = cidr.split('/');
    const name = objectName(this.#o.prefix, cidr);
    // ignore-warnings: another object with the same address is a warning, not a reason to stop.
    if (len === '32') await s.call('add-host', { name, 'ip-address': ip, 'ignore-warnings': true }, signal);
    else await s.call('add-network', { name, subnet: ip, 'mask-length': Number(len), 'ignore-warnings': true }, signal);
  }

  async #deleteObject(s: MgmtSession, name: string, type: string, signal?: AbortSignal): Promise<void> {
    await s.call(type === 'network' ? 'delete-network' : 'delete-host', { name, 'ignore-warnings': true }, signal);
  }

  async #setMembers(s: MgmtSession, op: 'add' | 'remove', names: string[], signal?: AbortSignal): Promise<void> {
    for (const batch of chunks(names, this.#o.batchSize)) await s.call('set-group', { name: this.#o.group, members: { [op]: batch } }, signal);
  }

  /** Deletes owned objects the group no longer uses; one the server refuses to delete is kept and logged. */
  async #deleteUnused(s: MgmtSession, owned: Owned, keep: Set<string>, signal?: AbortSignal): Promise<boolean> {
    let changed = false;
    for (const [name, { type }] of owned) {
      if (keep.has(name)) continue;
      try {
        await this.#deleteObject(s, name, type, signal);
        changed = true;
      } catch (err) {
        if (signal?.aborted || !(err instanceof CheckPointApiError)) throw err;
        this.#o.log.warn({ err, object: name }, 'object kept: the server refused to delete it');
      }
    }
    return changed;
  }
}

export function groupAdapter(o: GroupAdapterOptions): EnforcerAdapter {
  return new GroupTarget(o);
}

export function createGroupEnforcer(o: GroupAdapterOptions): Enforcer {
  return createEngineEnforcer(groupAdapter(o), { capacity: o.capacity, log: o.log });
}
