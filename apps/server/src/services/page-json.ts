import { EVAL_JS, EXEC_PYTHON } from '@rampart/scoring';

/*
 * JSON.stringify for page envelopes (`{ header, body }`), with the parts every page repeats taken
 * from a cache: the score formulas (`eval`, `exec_python`, ~400 characters that JSON.stringify
 * scans for escapes at each call) and objects made immutable with `writtenOnce` (envelope.ts
 * `userObject`: the caller's `user`, one per principal). Stringifying a look-up's envelope whole
 * cost more CPU than the look-up itself. The text is byte for byte JSON.stringify's
 * (page-json.test.ts).
 */

/** Values written from a cache: the JSON of the score formulas. */
const CONSTANT_JSON = new Map<unknown, string>([
  [EVAL_JS, JSON.stringify(EVAL_JS)],
  [EXEC_PYTHON, JSON.stringify(EXEC_PYTHON)],
]);
/** The JSON of the objects made immutable by `writtenOnce` (null: not written yet). */
const onceJson = new WeakMap<object, string | null>();
/** `"key":` of the header keys seen. */
const keyJson = new Map<string, string>();

function valueJson(value: unknown): string | undefined {
  if (typeof value === 'string') return CONSTANT_JSON.get(value) ?? JSON.stringify(value);
  if (value !== null && typeof value === 'object') {
    let text = onceJson.get(value);
    if (text === null) {
      text = JSON.stringify(value);
      onceJson.set(value, text);
    }
    if (text !== undefined) return text;
  }
  return JSON.stringify(value);
}

/**
 * Freezes `value` and what it holds (plain objects and arrays of plain values) and lets page
 * headers holding it write it from its JSON, made once. For objects many responses repeat.
 */
export function writtenOnce<T extends object>(value: T): T {
  const freeze = (v: unknown) => {
    if (v === null || typeof v !== 'object') return;
    Object.freeze(v);
    for (const child of Object.values(v)) freeze(child);
  };
  freeze(value);
  onceJson.set(value, null);
  return value;
}

function isEnvelope(data: unknown): data is { header: Record<string, unknown>; body: unknown } {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return false;
  let n = 0;
  for (const key in data) {
    if (n === 0 ? key !== 'header' : n === 1 ? key !== 'body' : true) return false;
    n++;
  }
  const header = (data as { header: unknown }).header;
  return n === 2 && header !== null && typeof header === 'object' && Object.getPrototypeOf(header) === Object.prototype && !('toJSON' in header);
}

/** JSON.stringify(data), with a page envelope's repeated header parts from the caches. */
export function stringify(data: unknown): string {
  if (!isEnvelope(data) || typeof (data as { toJSON?: unknown }).toJSON === 'function') return JSON.stringify(data);
  let text = '{"header":{';
  let first = true;
  for (const key in data.header) {
    if (!Object.hasOwn(data.header, key)) continue;
    const value = valueJson(data.header[key]);
    // JSON.stringify leaves out members whose value it cannot write (undefined, functions).
    if (value === undefined) continue;
    let name = keyJson.get(key);
    if (name === undefined) {
      name = `${JSON.stringify(key)}:`;
      if (keyJson.size < 256) keyJson.set(key, name);
    }
    text += first ? name + value : `,${name}${value}`;
    first = false;
  }
  const body = JSON.stringify(data.body);
  return body === undefined ? `${text}}}` : `${text}},"body":${body}}`;
}
