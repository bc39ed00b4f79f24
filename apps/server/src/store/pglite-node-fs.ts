import { fsync, fsyncSync } from 'node:fs';
import { promisify } from 'node:util';
import type { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';

type PostgresMod = Parameters<NodeFS['init']>[1];
interface NodeFsStream {
  nfd: number;
  /** The file's path inside PGlite's file system. */
  path?: string;
}

const fsyncAsync = promisify(fsync);
const isWal = (stream: NodeFsStream) => stream.path?.includes('/pg_wal/') ?? false;

type NodeOps = Record<string, (...args: never[]) => unknown>;
interface Attr {
  mode?: number;
}

/** Group and other permission bits: never set on the store's files (data-dir-permissions.ts). */
const NOT_OWNER = 0o077;

/**
 * PGlite's NodeFS with working fsync, and private files.
 *
 * Privacy: NODEFS creates files and directories with the modes PostgreSQL asks for and applies
 * some by chmod, which the process umask does not limit (pg_internal.init came out 0644). Every
 * mode it sets passes through here without group and other bits.
 *
 * Durability: PGlite mounts the data directory through Emscripten's
 * NODEFS, whose writes go straight to the real files (fs.writeSync), but whose streams have no
 * `fsync` operation: PostgreSQL's fsync() reaches `fd_sync`, finds none and returns success
 * without syncing. PGlite also starts PostgreSQL with `-F` (fsync=off). Both together meant an
 * acknowledged commit lived only in the OS page cache. This file system gives NODEFS streams an
 * fsync that calls fsync(2) on the real descriptor; with fsync on and `wal_sync_method=fsync`
 * (Emscripten's fdatasync is a no-op that never reaches the file system), every commit's WAL
 * flush and every checkpoint reach the disk before PostgreSQL carries on. A failed fsync throws
 * out of the WebAssembly call and stops the store, as PostgreSQL itself PANICs on one.
 *
 * A COMMIT's WAL fsync can be taken off the thread (deferWalSyncs): while the driver runs a
 * COMMIT, an fsync PostgreSQL asks for on a WAL segment is only noted, and the driver then awaits
 * flushDeferred() (fsync(2) on libuv's thread pool, the event loop free meanwhile) before the
 * transaction settles and before PostgreSQL runs anything else. The order of writes stays
 * PostgreSQL's: any write or fsync of a file outside pg_wal, and closing a noted descriptor, first
 * syncs the noted WAL on the spot, so no data or clog page reaches a file before the WAL it
 * depends on is on disk.
 */
export class StoreNodeFS extends NodeFS {
  /** fsync(2) calls made for PostgreSQL so far (metrics; tests prove the syncs happen). */
  syncs = 0;
  /** WAL descriptors PostgreSQL asked to sync during a deferring COMMIT, not synced yet. */
  private readonly pending = new Set<number>();
  private deferring = false;

  /** While on, a WAL fsync is noted for flushDeferred() instead of made (the driver's COMMIT only). */
  deferWalSyncs(on: boolean): void {
    this.deferring = on;
  }

  /** Syncs the noted WAL descriptors off the thread; throws when one fails (the store must stop). */
  async flushDeferred(): Promise<void> {
    const fds = [...this.pending];
    this.pending.clear();
    await Promise.all(fds.map((fd) => fsyncAsync(fd)));
    this.syncs += fds.length;
  }

  private syncPendingNow(): void {
    for (const fd of this.pending) {
      fsyncSync(fd);
      this.syncs += 1;
    }
    this.pending.clear();
  }

  override async init(pg: PGlite, opts: PostgresMod): Promise<{ emscriptenOpts: PostgresMod }> {
    const { emscriptenOpts } = await super.init(pg, opts);
    const patch = (mod: { NODEFS: { stream_ops: NodeOps; node_ops: NodeOps } }) => {
      const { stream_ops: streamOps, node_ops: nodeOps } = mod.NODEFS;
      streamOps.fsync = (stream: NodeFsStream) => {
        if (this.deferring && isWal(stream)) {
          this.pending.add(stream.nfd);
          return 0;
        }
        if (this.pending.size > 0) this.syncPendingNow();
        fsyncSync(stream.nfd);
        this.syncs += 1;
        return 0;
      };
      const write = streamOps.write! as (stream: NodeFsStream, ...rest: unknown[]) => unknown;
      streamOps.write = ((stream: NodeFsStream, ...rest: unknown[]) => {
        if (this.pending.size > 0 && !isWal(stream)) this.syncPendingNow();
        return write(stream, ...rest);
      }) as never;
      const close = streamOps.close! as (stream: NodeFsStream) => unknown;
      streamOps.close = ((stream: NodeFsStream) => {
        if (this.pending.has(stream.nfd)) this.syncPendingNow();
        return close(stream);
      }) as never;
      const mknod = nodeOps.mknod! as (parent: unknown, name: string, mode: number, dev: unknown) => unknown;
      nodeOps.mknod = ((parent: unknown, name: string, mode: number, dev: unknown) => mknod(parent, name, mode & ~NOT_OWNER, dev)) as never;
      for (const ops of [nodeOps, streamOps]) {
        const setattr = ops.setattr! as (target: unknown, attr: Attr) => unknown;
        ops.setattr = ((target: unknown, attr: Attr) => setattr(target, attr.mode === undefined ? attr : { ...attr, mode: attr.mode & ~NOT_OWNER })) as never;
      }
    };
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), patch as unknown as (mod: PostgresMod) => void] } };
  }
}

/** PGlite's start parameters with fsync on (its defaults carry `-F`) and WAL synced by fsync(). */
export function durableStartParams(defaults: readonly string[]): string[] {
  return [...defaults.filter((p) => p !== '-F'), '-c', 'fsync=on', '-c', 'wal_sync_method=fsync'];
}
