import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import type { Command } from 'commander';
import { loadConfig } from '../config.ts';
import { catalogFileType } from '../services/named/file-type-catalog.ts';
import { openStore } from '../store/index.ts';
import type { ArchivedFile } from '../store/files.ts';

/*
 * `rampart archive import <file.csv>`: loads historical file digests into the archive that
 * `GET /files/{digest}?deep_scan=YES` searches. CSV with a header naming the columns
 * md5,sha1,sha256,file_type,file_name,score,ts (RFC 4180 quoting; file_name may be empty).
 * Bad rows are counted and the first ones reported by line; good rows load in batches.
 */

const COLUMNS = ['md5', 'sha1', 'sha256', 'file_type', 'file_name', 'score', 'ts'] as const;
const BATCH = 5_000;
const HEX = { md5: /^[0-9a-fA-F]{32}$/, sha1: /^[0-9a-fA-F]{40}$/, sha256: /^[0-9a-fA-F]{64}$/ };

type CsvRow = Record<(typeof COLUMNS)[number], string>;

/** One CSV row as an archive row, or the reason it is refused. */
export function archiveRow(row: CsvRow): ArchivedFile | string {
  for (const kind of ['md5', 'sha1', 'sha256'] as const) if (!HEX[kind].test(row[kind] ?? '')) return `${kind}: not a ${kind.toUpperCase()} hex digest`;
  const fileType = catalogFileType(row.file_type ?? '');
  if (!fileType) return `file_type: '${row.file_type}' is not one of GET /file_types`;
  const score = Number(row.score);
  if (!Number.isInteger(score) || score < 1 || score > 1000) return 'score: expected an integer from 1 to 1000';
  const ts = Number(row.ts);
  if (!Number.isInteger(ts) || ts < 0) return 'ts: expected epoch seconds';
  if ((row.file_name ?? '').length > 1024) return 'file_name: longer than 1024 characters';
  return {
    md5: Buffer.from(row.md5, 'hex'),
    sha1: Buffer.from(row.sha1, 'hex'),
    sha256: Buffer.from(row.sha256, 'hex'),
    file_type: fileType,
    file_name: row.file_name ?? '',
    score,
    ts,
    tags: [],
  };
}

export async function importArchive(file: string): Promise<{ imported: number; rejected: number; errors: string[] }> {
  const config = loadConfig();
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, owner: 'cli' });
  const result = { imported: 0, rejected: 0, errors: [] as string[] };
  let batch: ArchivedFile[] = [];
  const flush = async () => {
    await store.files.archive(batch);
    result.imported += batch.length;
    batch = [];
  };
  try {
    const parser = createReadStream(file).pipe(parse({ columns: true, skip_empty_lines: true, trim: true, info: true }));
    for await (const { record, info } of parser as AsyncIterable<{ record: CsvRow; info: { lines: number } }>) {
      const row = archiveRow(record);
      if (typeof row === 'string') {
        result.rejected += 1;
        if (result.errors.length < 20) result.errors.push(`line ${info.lines}: ${row}`);
        continue;
      }
      batch.push(row);
      if (batch.length >= BATCH) await flush();
    }
    await flush();
    return result;
  } finally {
    await store.close();
  }
}

export function registerArchiveCommands(program: Command): void {
  program
    .command('archive')
    .description('the file digest archive searched by deep scans')
    .command('import')
    .description(`load a CSV of historical digests (header: ${COLUMNS.join(',')})`)
    .argument('<file>', 'CSV file')
    .action(async (file: string) => {
      const result = await importArchive(file);
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      if (result.rejected > 0) process.exitCode = 1;
    });
}
