/**
 * RFC 4180 CSV: fields with a comma, quote or line break are quoted, quotes doubled. A field that
 * a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first) gets a leading `'`,
 * since indicators are text other organizations wrote — except plain numbers (a score of -1).
 */
export function csvField(value: unknown): string {
  let text = value === null || value === undefined ? '' : Array.isArray(value) ? value.join(' ') : typeof value === 'object' ? JSON.stringify(value) : String(value as string | number | boolean);
  if (/^[=+\-@\t\r]/.test(text) && !/^-?\d+(\.\d+)?$/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv<T>(columns: Array<[string, (row: T) => unknown]>, rows: Iterable<T>): string {
  const lines = [columns.map(([name]) => csvField(name)).join(',')];
  for (const row of rows) lines.push(columns.map(([, get]) => csvField(get(row))).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

/** Offers text as a file download (no server round trip: the rows are already here). */
export function download(name: string, text: string, type = 'text/csv'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
