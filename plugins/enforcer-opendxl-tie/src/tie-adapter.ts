import { access, constants, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { codecOf, createEngineEnforcer, writeFileAtomic, type BlockEntry, type Enforcer, type EnforcerAdapter, type PluginLogger } from '@rampart/plugin-kit';

const fileCodec = codecOf('file');

/** What the adapter needs of TIE (TieFiles, or a double in unit tests). */
export interface ReputationService {
  set(digest: string, r: { trustLevel: number; filename: string; comment: string }, signal?: AbortSignal): Promise<void>;
  enterpriseTrustLevel(digest: string, signal?: AbortSignal): Promise<number>;
}

export interface TieAdapterOptions {
  tie: ReputationService;
  /** `fileslist_file`: the digests this enforcer holds malicious, one a line, written atomically. */
  listFile: string;
  /** Trust level of an enforced digest (KNOWN_MALICIOUS, 1, by default). */
  blockLevel: number;
  /** Trust level a digest is set back to when it leaves the list (NOT_SET, 0, by default). */
  releaseLevel: number;
  /** Trust level of a digest the organization whitelisted (KNOWN_TRUSTED, 99, by default); null: whitelists are not sent. */
  trustLevel: number | null;
  filename: string;
  comment: string;
  /** Requests in flight at once. */
  inFlight: number;
  /** `tie`: `read` asks TIE for each candidate digest; `list_file`: `read` trusts the list file. */
  readBack: 'tie' | 'list_file';
  /** Checks the broker connection (connects when needed). */
  connect(signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
  capacity: number;
  log: PluginLogger;
}

const header = (reputation: 'malicious' | 'trusted') => `# File digests the Rampart agent set to a ${reputation} TIE reputation; every change overwrites this file.\n`;

/** The digests of a list file: one a line, `#` comments and blank lines skipped, canonical, sorted. */
export function parseDigestList(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const digest = fileCodec.canonical(line.replace(/#.*/, '').trim());
    if (digest) out.add(digest);
  }
  return [...out].sort(fileCodec.compare);
}

export function renderDigestList(digests: Iterable<string>, reputation: 'malicious' | 'trusted' = 'malicious'): string {
  return header(reputation) + [...new Set(digests)].sort(fileCodec.compare).map((d) => `${d}\n`).join('');
}

/** Runs `task` on every item with at most `limit` in flight; the first failure rejects (after the others settle). */
export async function eachLimited<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>, signal?: AbortSignal): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (!failure && next < items.length) {
      signal?.throwIfAborted();
      const item = items[next++]!;
      try {
        await task(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.err;
}

/** Those of `digests` TIE holds at the block level now (one request each, `inFlight` at once). */
async function heldAt(o: TieAdapterOptions, digests: readonly string[], signal?: AbortSignal): Promise<string[]> {
  const held: string[] = [];
  await eachLimited(
    digests,
    o.inFlight,
    async (d) => {
      if ((await o.tie.enterpriseTrustLevel(d, signal)) === o.blockLevel) held.push(d);
    },
    signal,
  );
  return held;
}

/**
 * The whitelist half of the adapter: `<fileslist_file>.trusted` records the digests this enforcer
 * set to trustLevel, so that one the whitelist drops is set back.
 */
function trustedReputations(o: TieAdapterOptions) {
  const trustedFile = `${o.listFile}.trusted`;
  /**
   * Whitelisted digests get the trusted reputation; those trusted before and no longer
   * whitelisted (nor blocked now) are set back. The trusted file names both while it runs.
   */
  return async function trust(enforced: ReadonlySet<string>, whitelisted: readonly string[], signal?: AbortSignal): Promise<void> {
    if (o.trustLevel === null) return;
    const level = o.trustLevel;
    let before: string[] = [];
    try {
      before = parseDigestList(await readFile(trustedFile, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const now = whitelisted.filter((d) => !enforced.has(d));
    const keep = new Set(now);
    const drop = before.filter((d) => !keep.has(d) && !enforced.has(d));
    await writeFileAtomic(trustedFile, renderDigestList([...now, ...drop], 'trusted'), 0o644);
    await eachLimited(now, o.inFlight, (d) => o.tie.set(d, { trustLevel: level, filename: o.filename, comment: o.comment }, signal), signal);
    await eachLimited(drop, o.inFlight, (d) => o.tie.set(d, { trustLevel: o.releaseLevel, filename: o.filename, comment: o.comment }, signal), signal);
    await writeFileAtomic(trustedFile, renderDigestList(now, 'trusted'), 0o644);
  };
}

/**
 * TIE file reputations as an enforcer target. Every enforced digest gets the enterprise
 * reputation `blockLevel`; a digest that leaves the list is set back to `releaseLevel`. TIE has no
 * call that lists the reputations one client set, so the digests this enforcer may have set are
 * those of `fileslist_file` plus those it set since it started; `read` asks TIE for each of them
 * and returns those TIE holds at `blockLevel`. The list file is written before a change with
 * every digest the change touches (so that a change cut short leaves nothing unaccounted for)
 * and after it with exactly the enforced set.
 */
export function tieAdapter(o: TieAdapterOptions): EnforcerAdapter & { allow(values: readonly string[]): void } {
  /** Digests set to blockLevel by this process and not yet set back. */
  const touched = new Set<string>();
  /** The organization's whitelisted digests (Enforcer.allow), set to trustLevel at each full write. */
  let allowed: string[] = [];
  const trust = trustedReputations(o);

  async function listed(): Promise<string[]> {
    try {
      return parseDigestList(await readFile(o.listFile, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  async function candidates(): Promise<Set<string>> {
    return new Set([...(await listed()), ...touched]);
  }

  const writeList = (digests: Iterable<string>) => writeFileAtomic(o.listFile, renderDigestList(digests), 0o644);

  async function block(digests: readonly string[], signal?: AbortSignal): Promise<void> {
    for (const d of digests) touched.add(d);
    await eachLimited(digests, o.inFlight, (d) => o.tie.set(d, { trustLevel: o.blockLevel, filename: o.filename, comment: o.comment }, signal), signal);
  }

  async function release(digests: readonly string[], signal?: AbortSignal): Promise<void> {
    await eachLimited(
      digests,
      o.inFlight,
      async (d) => {
        await o.tie.set(d, { trustLevel: o.releaseLevel, filename: o.filename, comment: o.comment }, signal);
        touched.delete(d);
      },
      signal,
    );
  }

  /** Blocks `add`, releases `remove`, with the list file covering both while it runs. */
  async function change(enforced: readonly string[], add: readonly string[], remove: readonly string[], signal?: AbortSignal): Promise<void> {
    await writeList([...enforced, ...remove]);
    await block(add, signal);
    await release(remove, signal);
    await writeList(enforced);
  }

  return {
    async read(signal?: AbortSignal) {
      return o.readBack === 'list_file' ? listed() : heldAt(o, [...(await candidates())], signal);
    },

    async replaceAll(entries: readonly BlockEntry[], signal?: AbortSignal) {
      const enforced = entries.map((e) => e.value);
      const keep = new Set(enforced);
      // A digest about to be trusted is not set back first (no moment without a reputation).
      const trusted = new Set(o.trustLevel === null ? [] : allowed);
      const stale = [...(await candidates())].filter((d) => !keep.has(d) && !trusted.has(d));
      await change(enforced, enforced, stale, signal);
      await trust(keep, allowed, signal);
    },

    allow(values: readonly string[]) {
      allowed = values.flatMap((v) => fileCodec.canonical(v) ?? []);
    },

    async applyBatch(batch, all, signal?: AbortSignal) {
      await change(
        all().map((e) => e.value),
        batch.add.map((e) => e.value),
        batch.remove,
        signal,
      );
    },

    async removeAll(signal?: AbortSignal) {
      await change([], [], [...(await candidates())], signal);
      await trust(new Set(), [], signal);
    },

    async probe(signal?: AbortSignal) {
      try {
        await access(dirname(o.listFile), constants.W_OK);
      } catch (err) {
        throw new Error(`directory of ${o.listFile} not writable: ${(err as Error).message}`);
      }
      await o.connect(signal);
    },

    close: () => o.close(),
  };
}

export function createTieEnforcer(o: TieAdapterOptions): Enforcer {
  const adapter = tieAdapter(o);
  const enforcer = createEngineEnforcer(adapter, { capacity: o.capacity, log: o.log, codec: fileCodec });
  return Object.assign(enforcer, { allow: (values: readonly string[]) => adapter.allow(values) });
}
