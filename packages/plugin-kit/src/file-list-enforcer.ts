import { access, readFile, constants } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { BlockEntry, Diff, EnforceResult, Enforcer, EnforcerHealth, ReconcileResult } from './enforcer.ts';
import type { PluginLogger } from './logger.ts';
import { sortCidrs, sortEntries } from './block-list.ts';
import { DesiredSet } from './desired-set.ts';
import { ipv4Codec, type KindCodec } from './kinds.ts';
import { writeFileAtomic } from './atomic-file.ts';
import { runChecked, type CommandRunner } from './shell.ts';
import { throwIfAborted } from './abort.ts';

/** How one system's list file looks. `parse` returns canonical values of the enforcer's kind, sorted. */
export interface ListFileFormat {
  render(entries: BlockEntry[]): string;
  parse(text: string): string[];
}

export interface FileListEnforcerOptions {
  path: string;
  format: ListFileFormat;
  /** Run after every change of the file; '' runs nothing. */
  reloadCommand: string;
  reloadTimeoutMs?: number;
  capacity: number;
  run: CommandRunner;
  log: PluginLogger;
  fileMode?: number;
  /** The indicator kind the file lists (IPv4 CIDRs unless told otherwise). */
  codec?: KindCodec;
  /**
   * Extra step after the file is in place (HAProxy pushes through its runtime API instead of a
   * reload). Receives the entries now in the file.
   */
  afterWrite?(entries: BlockEntry[], reason: 'sync' | 'apply' | 'withdraw', signal?: AbortSignal): Promise<void>;
  /** Reads back the live target when it is not the file itself. */
  readLive?(signal?: AbortSignal): Promise<string[]>;
  /** Extra health probe of the live target (no side effects); throws what is wrong. */
  probe?(signal?: AbortSignal): Promise<void>;
}

/**
 * The enforcer of every system that reads a list file: keeps what it owns with scores, writes
 * the whole file atomically once per batch (a diff is one batch), then reloads. A diff that
 * leaves the file unchanged neither writes nor reloads; `sync` always does both, because it is
 * how the runtime re-asserts a target someone else changed.
 */
export function createFileListEnforcer(opts: FileListEnforcerOptions): Enforcer {
  const codec = opts.codec ?? ipv4Codec;
  const desired = new DesiredSet(codec);
  // IPv4 keeps its numeric sort (fast at 100k entries); other kinds sort by their codec.
  const sortValues = (values: Iterable<string>): string[] => (codec.kind === 'ipv4' ? sortCidrs(values) : [...new Set(values)].sort(codec.compare));
  const sortByValue = (entries: BlockEntry[]): BlockEntry[] => (codec.kind === 'ipv4' ? sortEntries(entries) : [...entries].sort((a, b) => codec.compare(a.value, b.value)));
  const sameCidrs = (live: string[], entries: BlockEntry[]): boolean => {
    const a = sortValues(live);
    return a.length === entries.length && a.every((c, i) => c === entries[i]!.value);
  };
  let seeded = false;

  async function readFileText(): Promise<string | undefined> {
    try {
      return await readFile(opts.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  // A process restarted without a sync still owns what its file holds; scores are unknown (0).
  async function seed(): Promise<void> {
    if (seeded) return;
    const text = await readFileText();
    if (text !== undefined) desired.replace(opts.format.parse(text).map((cidr) => ({ value: cidr, score: 0 })));
    seeded = true;
  }

  async function commit(reason: 'sync' | 'apply' | 'withdraw', force: boolean, signal: AbortSignal | undefined): Promise<EnforceResult> {
    throwIfAborted(signal);
    const { kept, cut } = desired.withinCapacity(opts.capacity);
    const entries = sortByValue(kept);
    const text = opts.format.render(entries);
    const previous = await readFileText();
    const fileChanged = force || previous !== text;
    if (fileChanged) await writeFileAtomic(opts.path, text, opts.fileMode);
    // With a live target apart from the file (a runtime API), an unchanged file is not enough.
    try {
      if (fileChanged || (opts.readLive && !sameCidrs(await opts.readLive(signal), entries))) {
        if (opts.afterWrite) await opts.afterWrite(entries, reason, signal);
        if (opts.reloadCommand) await runChecked(opts.run, opts.reloadCommand, opts.reloadTimeoutMs, signal);
        opts.log.debug({ reason, entries: entries.length }, 'list committed');
      }
    } catch (err) {
      // The system still runs the old list (a reload failed, or was cancelled): put the old file
      // back so that the file (what list() reads) and a later restart agree with it, and the
      // next call writes again.
      if (fileChanged && previous !== undefined && previous !== text) await writeFileAtomic(opts.path, previous, opts.fileMode);
      throw err;
    }
    if (cut > 0) opts.log.warn({ cut, capacity: opts.capacity }, 'capacity reached; lowest scores cut');
    if (desired.invalid > 0) opts.log.warn({ invalid: desired.invalid, kind: codec.kind }, 'inputs not of the enforcer kind ignored');
    return { enforced: entries.length, cut, ...(desired.invalid > 0 ? { invalid: desired.invalid } : {}) };
  }

  async function list(signal?: AbortSignal): Promise<string[]> {
    throwIfAborted(signal);
    if (opts.readLive) return sortValues(await opts.readLive(signal));
    const text = await readFileText();
    return text === undefined ? [] : opts.format.parse(text);
  }

  return {
    capacity: opts.capacity,
    async healthcheck(signal?: AbortSignal): Promise<EnforcerHealth> {
      try {
        await access(dirname(opts.path), constants.W_OK);
      } catch (err) {
        return { ok: false, detail: `directory of ${opts.path} not writable: ${(err as Error).message}` };
      }
      try {
        await opts.probe?.(signal);
        return { ok: true };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
    async sync(entries: BlockEntry[], signal?: AbortSignal): Promise<EnforceResult> {
      desired.replace(entries);
      seeded = true;
      return commit('sync', true, signal);
    },
    async apply(diff: Diff, signal?: AbortSignal): Promise<EnforceResult> {
      await seed();
      desired.apply(diff);
      return commit('apply', false, signal);
    },
    list,
    async reconcile(signal?: AbortSignal): Promise<ReconcileResult> {
      await seed();
      const live = await list(signal);
      const { kept, cut } = desired.withinCapacity(opts.capacity);
      const want = sortValues(kept.map((e) => e.value));
      const drifted = live.length !== want.length || live.some((c, i) => c !== want[i]);
      if (!drifted) return { enforced: want.length, cut, drifted };
      opts.log.warn({ live: live.length, expected: want.length }, 'target drifted; re-asserting');
      desired.invalid = 0;
      return { ...(await commit('sync', true, signal)), drifted };
    },
    async withdraw(signal?: AbortSignal): Promise<void> {
      desired.replace([]);
      seeded = true;
      await commit('withdraw', true, signal);
    },
    async close(): Promise<void> {},
  };
}
