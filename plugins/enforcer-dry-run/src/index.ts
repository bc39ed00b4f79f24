import { open, rename } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { defineEnforcer, throwIfAborted, type BlockEntry, type Diff, type EnforceResult, type Enforcer, type EnforcerContext } from '@rampart/plugin-kit';
import type { IpsLabel } from '@rampart/contracts';
import { CompactSet, cidrKey, keyCidr, writeCidr } from './compact-set.ts';
import { createNamedDryRun } from './named-kind.ts';
import { readDryRunFile, type DryRunOperation } from './record.ts';

export { readDryRunFile, type DryRunFile, type DryRunOperation } from './record.ts';

/** The open-set `ips` label this enforcer is configured under (`ips.dry_run`). */
export const DRY_RUN_LABEL = 'dry_run';

export const DryRunConfig = z.strictObject({
  active: z.boolean(),
  path: z.string().min(1).max(4096).describe('JSON file the enforcer writes what it would enforce to'),
  capacity: z.int().min(1).optional().describe('Pretend capacity, to exercise the lowest-score cut'),
  history_limit: z.int().min(0).max(10_000).default(100).describe('Operations kept in the file'),
  kinds: z
    .strictObject({
      domain: z.strictObject({ path: z.string().min(1).max(4096) }).optional(),
      url: z.strictObject({ path: z.string().min(1).max(4096) }).optional(),
      file: z.strictObject({ path: z.string().min(1).max(4096) }).optional(),
    })
    .default({})
    .describe('Domains, URLs and file digests, each recorded in a JSON file of its own; a kind named here is synced and enforced'),
}).superRefine((cfg, ctx) => {
  const paths = [cfg.path, ...Object.values(cfg.kinds).map((k) => k?.path)].filter(Boolean);
  if (new Set(paths).size !== paths.length) ctx.addIssue({ code: 'custom', path: ['kinds'], message: 'each kind needs a file of its own' });
});
export type DryRunConfig = z.infer<typeof DryRunConfig>;

/** Operations list at most this many added or removed entries. */
const LISTED = 1000;

/** Keeps the `capacity` highest scores (ties: lower address first), like a real backend would. */
function cut(entries: readonly BlockEntry[], capacity: number): { kept: readonly BlockEntry[]; cut: number } {
  if (entries.length <= capacity) return { kept: entries, cut: 0 };
  const keyed = entries.map((e) => ({ e, k: cidrKey(e.value) ?? 0 }));
  keyed.sort((a, b) => b.e.score - a.e.score || a.k - b.k);
  return { kept: keyed.slice(0, capacity).map((x) => x.e), cut: entries.length - capacity };
}

/**
 * Writes the file atomically (temp file, fsync, rename, directory fsync) in 1 MiB chunks built
 * straight from the key array, so a million entries never exist as a million strings.
 */
async function writeRecord(path: string, set: CompactSet, operations: DryRunOperation[]): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(tmp, 'w', 0o644);
  try {
    await handle.write(`{"plugin":"dry-run","updated_at":${JSON.stringify(new Date().toISOString())},"enforced":[`);
    const chunk = Buffer.allocUnsafe(1 << 20);
    let used = 0;
    for (let i = 0; i < set.keys.length; i++) {
      if (used > chunk.length - 32) {
        await handle.write(chunk, 0, used);
        used = 0;
      }
      if (i > 0) chunk[used++] = 44; // ,
      chunk[used++] = 34; // "
      used = writeCidr(chunk, used, set.keys[i]!);
      chunk[used++] = 34;
    }
    await handle.write(chunk, 0, used);
    await handle.write(`],"operations":${JSON.stringify(operations)}}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, path);
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/**
 * Enforces nothing: records what it would enforce in a JSON file, written atomically after
 * every call, so operators can trial a configuration and tests can read the agent's decisions.
 */
export const dryRunEnforcer = defineEnforcer<DryRunConfig>({
  name: 'dry-run',
  // The contracts' `ips` object is an open set; `dry_run` is one of its further entries.
  serves: DRY_RUN_LABEL as IpsLabel,
  configSchema: DryRunConfig,
  kinds: ['ipv4', 'domain', 'url', 'file'],
  kindsOf: (config) => ['ipv4', ...(['domain', 'url', 'file'] as const).filter((kind) => config.kinds[kind])],
  async create(config, ctx): Promise<Enforcer> {
    if (ctx.kind && ctx.kind !== 'ipv4') return createNamed(config, ctx, ctx.kind);
    const capacity = config.capacity ?? Infinity;
    const set = new CompactSet();
    const history: DryRunOperation[] = [];
    const existing = await readDryRunFile(config.path);
    if (existing) set.replace(existing.enforced.map((cidr) => ({ value: cidr, score: 0 })));

    async function record(op: DryRunOperation): Promise<EnforceResult> {
      history.push(op);
      while (history.length > config.history_limit) history.shift();
      await writeRecord(config.path, set, history);
      ctx.log.info({ op: op.op, enforced: op.enforced, cut: op.cut }, 'dry-run enforcer recorded an operation');
      const result: EnforceResult = { enforced: set.size, cut: op.cut };
      if (set.invalid > 0) result.invalid = set.invalid;
      return result;
    }

    return {
      capacity,
      async healthcheck(signal?: AbortSignal) {
        throwIfAborted(signal);
        return { ok: true };
      },
      // Each call is one local file write: the signal is checked before it, nothing waits after.
      async sync(desired, signal?: AbortSignal) {
        throwIfAborted(signal);
        const { kept, cut: dropped } = cut(desired, capacity);
        set.replace(kept);
        return record({ op: 'sync', at: new Date().toISOString(), enforced: set.size, cut: dropped });
      },
      async apply(diff: Diff, signal?: AbortSignal) {
        throwIfAborted(signal);
        const { added, removed } = set.apply(diff);
        let dropped = 0;
        if (set.size > capacity) {
          const all = [...set.keys].map((k, i) => ({ value: keyCidr(k), score: set.scores[i]! }));
          const r = cut(all, capacity);
          set.replace(r.kept);
          dropped = r.cut;
        }
        return record({
          op: 'apply',
          at: new Date().toISOString(),
          enforced: set.size,
          added: added.slice(0, LISTED),
          removed: removed.slice(0, LISTED),
          cut: dropped,
        });
      },
      async list(signal?: AbortSignal) {
        throwIfAborted(signal);
        const file = await readDryRunFile(config.path);
        return file ? file.enforced : [];
      },
      async withdraw(signal?: AbortSignal) {
        throwIfAborted(signal);
        set.replace([]);
        await record({ op: 'withdraw', at: new Date().toISOString(), enforced: 0, cut: 0 });
      },
      async close() {},
    };
  },
});

function createNamed(config: DryRunConfig, ctx: EnforcerContext, kind: 'domain' | 'url' | 'file'): Promise<Enforcer> {
  const target = config.kinds[kind];
  if (!target) throw new Error(`dry-run: no file configured for kind '${kind}' (kinds.${kind}.path)`);
  return createNamedDryRun({ kind, path: target.path, capacity: config.capacity ?? Infinity, historyLimit: config.history_limit, log: ctx.log });
}
