import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AgentFileConfig } from '../config/load.ts';

/**
 * `status`: asks the running agent's /healthz; when it does not answer, reads the state
 * directory without changing anything (feed cursor, unsent reports).
 */
export async function agentStatus(file: AgentFileConfig): Promise<{ source: 'agent' | 'state_dir'; status: Record<string, unknown> }> {
  const { metrics_host: host, metrics_port: port, state_dir: dir } = file.local;
  if (port > 0) {
    try {
      const res = await fetch(`http://${host.includes(':') ? `[${host}]` : host}:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
      return { source: 'agent', status: (await res.json()) as Record<string, unknown> };
    } catch {
      // not running (or not reachable): fall through to the files
    }
  }
  const status: Record<string, unknown> = { running_process: false, state_dir: dir };
  try {
    const buf = await readFile(join(dir, 'feed-state.bin'));
    status.feed_cursor = buf.readDoubleLE(8);
    status.last_full_reconcile = buf.readDoubleLE(16) || null;
    status.known_indicators = buf.readUInt32LE(24);
  } catch {
    status.feed_cursor = null;
  }
  try {
    const acked = Number((await readFile(join(dir, 'spool', 'acked'), 'utf8').catch(() => '0')).trim());
    const lines = (await readFile(join(dir, 'spool', 'reports.log'), 'utf8')).split('\n').filter(Boolean);
    status.spool_depth = lines.filter((l) => {
      try {
        return (JSON.parse(l) as { seq: number }).seq > acked;
      } catch {
        return false;
      }
    }).length;
  } catch {
    status.spool_depth = 0;
  }
  try {
    const dry = JSON.parse(await readFile(join(dir, 'settings.json'), 'utf8')) as { settings?: { running?: string } };
    status.settings_origin = dry.settings ? 'server' : 'local';
    if (dry.settings?.running) status.running = dry.settings.running;
  } catch {
    status.settings_origin = 'local';
  }
  return { source: 'state_dir', status };
}
