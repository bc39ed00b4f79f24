import { useRef, useState } from 'preact/hooks';
import { IMPORT_FORMATS, ImportResponse, type ImportFormat, type ImportRow } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Field, Notice, Select } from '../components.tsx';
import { canContribute, type Session } from '../session.ts';
import { guessFormat, sortRows, totalsLabel, type SortState } from '../table-logic.ts';
import { SortHeader } from './browse-table.tsx';

const FORMAT_LABEL: Record<ImportFormat, string> = { csv: 'CSV (value,kind,confidence,source)', stix21: 'STIX 2.1 bundle', misp: 'MISP event JSON' };
const STATUS_LABEL: Record<ImportRow['status'], string> = {
  accepted: 'would be reported',
  imported: 'reported',
  duplicate: 'already imported',
  refused: 'refused',
};

/**
 * Bulk import over `POST /import`: a file chosen or pasted, its format, the dry-run preview (what
 * would be reported, what is refused and why), then the import and its result, row by row.
 */
export function ImportPage({ session }: { session: Session }) {
  if (!canContribute(session)) return <Notice kind="info">Importing reports needs a contributor or an organization admin.</Notice>;
  return <Importer session={session} />;
}

function Importer({ session }: { session: Session }) {
  const [content, setContent] = useState('');
  const [fileName, setFileName] = useState<string>();
  const [format, setFormat] = useState<ImportFormat>('csv');
  const [source, setSource] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ message: string; fields: Record<string, string> }>();
  // The answer shown, and the content it answers (a preview of other text cannot be imported).
  const [result, setResult] = useState<{ response: ImportResponse; content: string; format: ImportFormat }>();
  const resultRef = useRef<HTMLElement>(null);

  async function send(dryRun: boolean) {
    setBusy(true);
    setError(undefined);
    try {
      const body = { format, content, dry_run: dryRun, ...(source.trim() ? { source: source.trim() } : {}) };
      const response = await session.api.send('POST', '/import', body, ImportResponse);
      if (response) setResult({ response, content, format });
      // The answer is what the user reads next: focus moves to its heading.
      setTimeout(() => resultRef.current?.querySelector<HTMLElement>('h2')?.focus(), 0);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  }

  async function choose(file: File | undefined) {
    if (!file) return;
    const text = await file.text();
    setFileName(file.name);
    setContent(text);
    setResult(undefined);
    const guessed = guessFormat(file.name, text);
    if (guessed) setFormat(guessed);
  }

  const previewed = result?.response.dry_run === true && result.content === content && result.format === format;
  return (
    <section aria-labelledby="import-h">
      <h1 id="import-h">Import</h1>
      <p class="muted">
        Brings a block list or a threat feed in as your organization's reports. Preview first: nothing is reported until you import, a refused row never stops the others, and the same file
        imported twice reports nothing twice.
      </p>
      <form
        class="card"
        aria-label="Import a file"
        onSubmit={(e) => {
          e.preventDefault();
          void send(true);
        }}
      >
        <ContentFields fileName={fileName} content={content} error={error?.fields.content} onChoose={(f) => void choose(f)} onInput={setContent} />
        <div class="grid">
          <Select label="Format" value={format} onChange={(v) => setFormat(v as ImportFormat)} options={IMPORT_FORMATS.map((f): [string, string] => [f, FORMAT_LABEL[f]])} />
          <Field label="Source (optional; a CSV row naming its own keeps it)" name="source" value={source} onInput={setSource} error={error?.fields.source} />
        </div>
        <div class="actions">
          <button type="submit" disabled={busy || content.trim() === ''}>
            {busy ? 'Working…' : 'Preview'}
          </button>
          <button type="button" class="danger" disabled={busy || !previewed || result.response.counts.accepted === 0} onClick={() => void send(false)}>
            Import
          </button>
          {!previewed && content.trim() !== '' && <span class="muted">Preview this content to import it.</span>}
        </div>
        {error && <Notice kind="error">{error.message}</Notice>}
      </form>
      {result && (
        <section ref={resultRef} aria-labelledby="import-result-h" data-testid="import-result">
          <ImportResult response={result.response} />
        </section>
      )}
    </section>
  );
}

/** The file to choose, or the text area to paste it in, with the server's message on the content. */
function ContentFields(props: { fileName: string | undefined; content: string; error: string | undefined; onChoose: (f: File | undefined) => void; onInput: (v: string) => void }) {
  return (
    <>
      <div class="field">
        <label for="import-file">File</label>
        <input id="import-file" name="file" type="file" accept=".csv,.json,text/csv,application/json,text/plain" onChange={(e) => props.onChoose((e.target as HTMLInputElement).files?.[0])} />
        {props.fileName && <small>{props.fileName}</small>}
      </div>
      <div class={`field${props.error ? ' invalid' : ''}`}>
        <label for="import-content">Or paste its content</label>
        <textarea
          id="import-content"
          name="content"
          rows={8}
          value={props.content}
          aria-invalid={props.error ? 'true' : undefined}
          aria-describedby={props.error ? 'import-content-err' : undefined}
          onInput={(e) => props.onInput((e.target as HTMLTextAreaElement).value)}
        />
        {props.error && (
          <small id="import-content-err" class="error-text">
            {props.error}
          </small>
        )}
      </div>
    </>
  );
}

function ImportResult({ response }: { response: ImportResponse }) {
  const { counts } = response;
  const [sort, setSort] = useState<SortState>();
  const keys: Record<string, (r: ImportRow) => string | number | null> = {
    Row: (r) => r.row,
    Value: (r) => r.canonical ?? r.value,
    Kind: (r) => r.kind,
    Outcome: (r) => r.status,
    Why: (r) => r.reason?.message ?? null,
  };
  const key = sort ? keys[sort.column] : undefined;
  const rows = sort && key ? sortRows(response.rows, key, sort.direction) : response.rows;
  return (
    <>
      <h2 id="import-result-h" tabIndex={-1}>
        {response.dry_run ? 'Preview' : 'Imported'}
      </h2>
      <p data-testid="import-counts" class={counts.refused ? 'notice info' : 'notice ok'} role="status">
        {response.dry_run
          ? `${counts.rows} rows: ${counts.accepted} would be reported, ${counts.refused} refused.`
          : `${counts.rows} rows: ${counts.imported} reported, ${counts.duplicate} already imported, ${counts.refused} refused.`}
      </p>
      <p class="muted totals">{totalsLabel({ shown: rows.length, total: counts.rows })} rows shown</p>
      <div class="table-wrap">
        <table class="browse" aria-label={response.dry_run ? 'Preview rows' : 'Imported rows'}>
          <thead>
            <tr>
              {Object.keys(keys).map((name) => (
                <SortHeader key={name} name={name} sort={sort} onSort={setSort} />
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.row} data-status={r.status}>
                <td data-label="Row" class="primary">
                  {r.row}
                </td>
                <td data-label="Value">
                  <span class={`value${r.kind === 'url' || r.kind === 'file' || r.kind === null ? ' long' : ''}`}>{r.canonical ?? r.value}</span>
                </td>
                <td data-label="Kind">{r.kind ?? '—'}</td>
                <td data-label="Outcome">
                  <span class={`badge${r.status === 'refused' ? ' dead' : ''}`}>{STATUS_LABEL[r.status]}</span>
                </td>
                <td data-label="Why">{r.reason ? `${r.reason.code}: ${r.reason.message}` : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
