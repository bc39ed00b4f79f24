import type { Ipv4Record } from '@rampart/contracts';
import { liveScore } from '@rampart/scoring';
import type { Ipv4Row } from '../../store/index.ts';
import { isoMillis } from '../envelope.ts';
import type { RecordDecision } from './policy.ts';

/** The record's `ip_info`: exactly the spec's fields, whatever else the stored document holds. */
function ipInfoOf(stored: Record<string, unknown> | null): NonNullable<Ipv4Record['ip_info']> {
  const text = (key: string) => {
    const value = stored?.[key];
    return typeof value === 'string' ? value : '';
  };
  return {
    as_domain: text('as_domain'),
    as_name: text('as_name'),
    asn: text('asn'),
    continent: text('continent'),
    continent_name: text('continent_name'),
    country: text('country'),
    country_name: text('country_name'),
  };
}

/** A record as the caller sees it: `decision`/`ttl` come from the caller's precedence (ipv4-policy). */
export function ipv4Record(row: Ipv4Row, delay: number, full: boolean, nowSeconds: number, decided: RecordDecision): Ipv4Record {
  const ip = row.network.endsWith('/32') ? row.network.slice(0, -3) : row.network;
  const record: Ipv4Record = {
    gid: row.gid,
    ip,
    ts: row.ts,
    entry_ts: row.entry_ts,
    is_network: row.is_network,
    score: row.score,
    delay,
    dec: liveScore(row.score, nowSeconds - row.ts),
    decision: decided.decision,
    ttl: decided.ttl,
  };
  if (!full) return record;
  return {
    ...record,
    ip_info: ipInfoOf(row.ip_info),
    info: { members: row.members, events: row.events, sources: row.sources, stix_bundles: [], attack_infos: [], notes: row.notes },
    elk_ts: isoMillis(row.ts),
    elk_entry_ts: isoMillis(row.entry_ts),
  };
}
