import { DesiredSet, codecOf, throwIfAborted, writeFileAtomic, type Diff, type EnforceResult, type Enforcer, type PluginLogger } from '@rampart/plugin-kit';
import { readDryRunFile as readRecord, type DryRunFile, type DryRunOperation } from './record.ts';

const LISTED = 1000;

export interface NamedDryRunOptions {
  kind: 'domain' | 'url' | 'file';
  path: string;
  capacity: number;
  historyLimit: number;
  log: PluginLogger;
}

/**
 * The dry-run enforcer of domains, URLs or file digests: the same file shape as the IPv4 one
 * (`enforced` in the kind's canonical form and order, then the operations) plus `kind`. These
 * sets are small next to IPv4's, so a plain map (plugin-kit's DesiredSet over the kind's codec)
 * holds them, with the same capacity cut.
 */
export async function createNamedDryRun(o: NamedDryRunOptions): Promise<Enforcer> {
  const codec = codecOf(o.kind);
  const desired = new DesiredSet(codec);
  const history: DryRunOperation[] = [];
  const existing = await readRecord(o.path);
  if (existing) desired.replace(existing.enforced.map((value) => ({ value, score: 0 })));
  let previous = new Set(existing?.enforced ?? []);

  async function record(op: DryRunOperation['op']): Promise<EnforceResult> {
    const { kept, cut } = desired.withinCapacity(o.capacity);
    const enforced = kept.map((e) => e.value).sort(codec.compare);
    const now = new Set(enforced);
    const operation: DryRunOperation = { op, at: new Date().toISOString(), enforced: enforced.length, cut };
    if (op === 'apply') {
      operation.added = enforced.filter((v) => !previous.has(v)).slice(0, LISTED);
      operation.removed = [...previous].filter((v) => !now.has(v)).sort(codec.compare).slice(0, LISTED);
    }
    history.push(operation);
    while (history.length > o.historyLimit) history.shift();
    const file: DryRunFile = { plugin: 'dry-run', kind: o.kind, updated_at: operation.at, enforced, operations: history };
    await writeFileAtomic(o.path, `${JSON.stringify(file)}\n`);
    previous = now;
    o.log.info({ op, kind: o.kind, enforced: enforced.length, cut }, 'dry-run enforcer recorded an operation');
    return { enforced: enforced.length, cut, ...(desired.invalid > 0 ? { invalid: desired.invalid } : {}) };
  }

  return {
    capacity: o.capacity,
    async healthcheck(signal?: AbortSignal) {
      throwIfAborted(signal);
      return { ok: true };
    },
    async sync(entries, signal?: AbortSignal) {
      throwIfAborted(signal);
      desired.replace(entries);
      return record('sync');
    },
    async apply(diff: Diff, signal?: AbortSignal) {
      throwIfAborted(signal);
      desired.apply(diff);
      return record('apply');
    },
    async list(signal?: AbortSignal) {
      throwIfAborted(signal);
      return (await readRecord(o.path))?.enforced ?? [];
    },
    async withdraw(signal?: AbortSignal) {
      throwIfAborted(signal);
      desired.replace([]);
      await record('withdraw');
    },
    async close() {},
  };
}
