import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { ApiError, IMPORT_FORMATS, type ImportFormat, type ImportResponse } from '@rampart/contracts';
import { cliActor } from '../services/operators/audit.ts';
import { runImport } from '../services/imports/imports.ts';
import type { Store } from '../store/index.ts';
import { cliReporting, organization, withStore } from './change-commands.ts';

/*
 * `rampart import <file> --org <gid>`: what `POST /api/v1/import` does, from the host
 * (services/imports/imports.ts), printed as JSON (the preview with --dry-run) and audited under
 * `cli:<host user>`.
 */

export interface ImportCommand {
  org: string;
  file: string;
  format?: ImportFormat | undefined;
  dryRun: boolean;
  source?: string | undefined;
}

/** The format a file reads as when --format is not given: .csv, else a STIX bundle or a MISP event by its JSON. */
export function formatOf(file: string, content: string): ImportFormat {
  if (/\.csv$/i.test(file)) return 'csv';
  try {
    const doc = JSON.parse(content) as Record<string, unknown>;
    if (doc.type === 'bundle') return 'stix21';
    if ('Event' in doc || 'Attribute' in doc) return 'misp';
  } catch {
    // Not JSON: read as CSV (its header says whether it is one).
  }
  if (content.trimStart().startsWith('{')) throw new ApiError('validation_failed', `${file}: neither a STIX 2.1 bundle nor a MISP event; name --format`);
  return 'csv';
}

/** Imports (or previews) a file as reports of the organization, audited as the CLI. */
export async function importFromCli(store: Store, c: ImportCommand): Promise<ImportResponse & { organization: string }> {
  const org = await organization(store, c.org);
  const content = readFileSync(c.file, 'utf8');
  const reporting = cliReporting(store);
  const format = c.format ?? formatOf(c.file, content);
  const result = await runImport(reporting, org.id, cliActor(), { format, content, dry_run: c.dryRun, ...(c.source === undefined ? {} : { source: c.source }) });
  await reporting.sent();
  return { organization: org.gid, ...result };
}

function formatOption(value: string): ImportFormat {
  if (!(IMPORT_FORMATS as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected ${IMPORT_FORMATS.join(', ')}`);
  return value as ImportFormat;
}

export function registerImportCommand(program: Command): void {
  program
    .command('import')
    .description("import indicators from a CSV (value,kind,confidence,source), a STIX 2.1 bundle or a MISP event as the organization's reports; printed as JSON and audited")
    .argument('<file>', 'the file to import')
    .requiredOption('--org <gid>', 'organization id (RMP-GID-...)')
    .option('--format <format>', `${IMPORT_FORMATS.join(', ')} (default: read from the file)`, formatOption)
    .option('--source <text>', 'source of every row (a CSV row naming its own keeps it); default import:<format>')
    .option('--dry-run', 'print what would be reported and what is refused, report nothing')
    .action((file: string, o: { org: string; format?: ImportFormat; source?: string; dryRun?: boolean }) =>
      withStore((store) => importFromCli(store, { org: o.org, file, format: o.format, dryRun: o.dryRun === true, source: o.source })),
    );
}
