import { z } from 'zod';

const fieldPath = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[\w@$-]+(?:\.[\w@$-]+)*$/, 'a field name, or a dotted path such as client.ip');

/**
 * One element of `ids.json_source.json`: a file of newline-delimited JSON events and where in
 * each event the attacker's address, the time and the kind of event are.
 */
export const JsonStream = z.strictObject({
  path: z.string().min(1, 'a file path is required').max(4096),
  /** Dotted path of the address (`ip`, `client.ip`, `src_ip`); `ip:port` and `[v6]:port` are accepted. */
  address_field: fieldPath.default('ip'),
  /** Dotted path of the time: epoch seconds or milliseconds, or an ISO 8601 string; the read time when absent. */
  time_field: fieldPath.default('ts'),
  /** Dotted path of a text that names the event; `kind` when absent. */
  kind_field: fieldPath.optional(),
  kind: z.string().min(1).max(64).regex(/^[\w.-]+$/).default('event'),
  /** Dotted path of a count the event stands for (aggregated events); 1 when absent. */
  attempts_field: fieldPath.optional(),
  /** Only events whose fields hold one of the listed values count (all listed fields must match). */
  when: z.record(fieldPath, z.array(z.union([z.string().max(1024), z.number(), z.boolean()])).min(1).max(100)).default({}),
});
export type JsonStream = z.infer<typeof JsonStream>;

/** Reads a field by exact key first (flattened events), then by dotted path. */
export function field(event: unknown, path: string): unknown {
  if (typeof event !== 'object' || event === null) return undefined;
  const record = event as Record<string, unknown>;
  if (path in record) return record[path];
  let value: unknown = event;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
