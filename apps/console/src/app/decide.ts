import type { Api } from './api.ts';
import type { IndicatorKind } from './indicator-kind.ts';

/** The API path of one indicator's decision (and look-up), per kind. */
export const INDICATOR_PATHS: Record<IndicatorKind, (id: string) => string> = {
  // Encoded: text the strict grammar refuses (`10.0.0.1/08`) reaches the server's validation, which names the problem.
  ipv4: (id) => `/ips/${encodeURIComponent(id)}`,
  file: (id) => `/files/${id}`,
  domain: (id) => `/domains/${encodeURIComponent(id)}`,
  url: (id) => `/urls/${encodeURIComponent(id)}`,
};

/**
 * Sets the organization's decision on one indicator, held or not: `PUT /ips/{ip}` (changes only
 * the decision, with an optional ttl for a block; POST /ips would also count a report) or the PUT
 * of the other kinds (files take the decision as a string, as specified).
 */
export async function setDecision(api: Api, kind: IndicatorKind, value: string, decision: -1 | 0 | 1, ttl?: number, reason?: string): Promise<void> {
  // Why, kept with the decision and in the audit log (an empty reason is none).
  const why = reason?.trim() ? { reason: reason.trim() } : {};
  if (kind === 'ipv4') {
    await api.send('PUT', INDICATOR_PATHS.ipv4(value), { decision, ...(decision === 1 && ttl ? { ttl } : {}), ...why });
    return;
  }
  await api.send('PUT', INDICATOR_PATHS[kind](value), { decision: kind === 'file' ? String(decision) : decision, ...why });
}
