import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { RefusedEnforcer } from './enforcer-slots.ts';

/* The agent's small helpers that need none of its state (agent.ts wires, these compute). */

/** The `ips.<label>` problems of a plan, one refusal per label. */
export function refusedEnforcers(problems: { path: string; message: string }[]): RefusedEnforcer[] {
  const byLabel = new Map<string, RefusedEnforcer>();
  for (const p of problems) {
    const m = /^ips\.([^.]+)(\.|$)/.exec(p.path);
    if (!m) continue;
    const label = m[1]!;
    const error = p.path === `ips.${label}` && p.message.startsWith('no enforcer') ? 'no_plugin' : 'config_invalid';
    const prior = byLabel.get(label);
    const detail = p.path === `ips.${label}` ? p.message : `${p.path}: ${p.message}`;
    byLabel.set(label, prior ? { ...prior, detail: `${prior.detail}; ${detail}`.slice(0, 500) } : { label, error, detail });
  }
  return [...byLabel.values()];
}

export function memoryMb(): Record<string, number> {
  const m = process.memoryUsage();
  const mb = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
  return { rss: mb(m.rss), heap_used: mb(m.heapUsed), heap_total: mb(m.heapTotal), external: mb(m.external), array_buffers: mb(m.arrayBuffers) };
}

export async function resolveHost(host: string): Promise<string[]> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare)) return [bare];
  try {
    return (await lookup(bare, { all: true })).map((a) => a.address);
  } catch {
    return [];
  }
}
