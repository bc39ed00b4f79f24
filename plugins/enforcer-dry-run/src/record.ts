import { readFile } from 'node:fs/promises';

export interface DryRunOperation {
  op: 'sync' | 'apply' | 'withdraw';
  at: string;
  enforced: number;
  /** Present for apply: what really changed (at most 1,000 of each listed). */
  added?: string[];
  removed?: string[];
  cut: number;
}

/** The file the enforcer writes; tests and operators read it back. */
export interface DryRunFile {
  plugin: 'dry-run';
  /** Present in the files of domains, URLs and digests (the IPv4 file predates kinds). */
  kind?: 'domain' | 'url' | 'file';
  updated_at: string;
  enforced: string[];
  operations: DryRunOperation[];
}

/** The file as last written, or undefined when there is none. */
export async function readDryRunFile(path: string): Promise<DryRunFile | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as DryRunFile;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

