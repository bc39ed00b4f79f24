import { canonicalIp } from '@rampart/plugin-kit';
import type { Detection, DetectionMode, LineParser } from '@rampart/plugin-kit';
import { z } from 'zod';

/** One row of Cloudflare's `firewallEventsAdaptive` dataset (the fields this source asks for). */
export const FirewallEvent = z.looseObject({
  action: z.string(),
  clientIP: z.string(),
  datetime: z.string(),
  rayName: z.string().optional(),
  source: z.string().optional(),
  ruleId: z.string().optional(),
  clientRequestHTTPHost: z.string().optional(),
  clientRequestPath: z.string().optional(),
});
export type FirewallEvent = z.infer<typeof FirewallEvent>;

/** Actions that mean the request was stopped, or failed a challenge. */
const STOPPED = ['block', 'drop', 'connection_close', 'challenge_failed', 'jschallenge_failed'];
/** Aggressive mode also counts challenges issued and rules that only logged. */
const CHALLENGED = ['challenge', 'jschallenge', 'managed_challenge', 'log'];

export function actionsFor(mode: DetectionMode): string[] {
  return mode === 'aggressive' ? [...STOPPED, ...CHALLENGED] : [...STOPPED];
}

/** A detection for an event whose action counts in `mode`, else undefined. */
export function eventDetection(event: FirewallEvent, mode: DetectionMode): Detection | undefined {
  if (!actionsFor(mode).includes(event.action)) return undefined;
  const ip = canonicalIp(event.clientIP);
  const ms = Date.parse(event.datetime);
  if (ip === undefined || !Number.isFinite(ms)) return undefined;
  return { ts: ms / 1000, ip, source: 'cdn_waf', kind: STOPPED.includes(event.action) ? 'cdn_block' : 'cdn_challenge', attempts: 1 };
}

/** `rampart-agent parse --source cdn_waf`: NDJSON of firewall events, as the API returns them. */
export class FirewallEventParser implements LineParser {
  private readonly counters = { lines: 0, invalid: 0, detections: 0 };
  constructor(private readonly mode: DetectionMode) {}

  stats(): Record<string, number> {
    return { ...this.counters };
  }

  push(line: string): Detection[] {
    this.counters.lines++;
    if (line.trim() === '') return [];
    let event: FirewallEvent;
    try {
      event = FirewallEvent.parse(JSON.parse(line));
    } catch {
      this.counters.invalid++;
      return [];
    }
    const detection = eventDetection(event, this.mode);
    if (detection) this.counters.detections++;
    return detection ? [detection] : [];
  }

  flush(): Detection[] {
    return [];
  }
}
