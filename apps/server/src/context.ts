import type { AppConfig } from './config.ts';
import type { Metrics } from './plugins/metrics.ts';
import type { Store } from './store/index.ts';
import type { CursorCodec } from './services/cursor.ts';
import type { EventBus } from './services/events.ts';
import type { Enrichment } from './services/enrichment/enrichment.ts';
import type { Ipv4Mirror } from './services/ipv4/mirror/index.ts';
import type { Ipv4Lists } from './services/ipv4/lists.ts';
import type { Ipv4Reports } from './services/ipv4/reports.ts';
import type { VpnService } from './services/vpn/vpn.ts';
import type { Rollups } from './services/operators/rollups.ts';
import type { CrowdsecBouncers } from './services/crowdsec/bouncers.ts';

/** What route plugins and services are given; no module holds state of its own. */
export interface AppContext {
  config: AppConfig;
  store: Store;
  metrics: Metrics;
  buildDate: string;
  events: EventBus;
  cursors: CursorCodec;
  /** Offline ASN, geolocation and CDN facts about addresses (made at start, its tables loaded on first use). */
  enrichment: Enrichment;
  /** In-memory copy of what the plain-text IPv4 lists read (null: they always read SQL). */
  ipv4Mirror: Ipv4Mirror | null;
  /** `POST /ips` and `PUT /ips/{ip}`: their rules over the one group-commit batcher of this replica. */
  ipv4Reports: Ipv4Reports;
  /** `/ipv4` and `/flat`: the organization's filter and where its rows come from (mirror or SQL). */
  ipv4Lists: Ipv4Lists;
  /** Secure-VPN licenses: address pool, keys and coins. */
  vpn: VpnService;
  /** Reports, coins, agents and bands over time: counted here, stored by a job every minute. */
  rollups: Rollups;
  /** The bouncer side of CrowdSec's Local API (`/crowdsec/v1/decisions…`) over agent keys. */
  crowdsecBouncers: CrowdsecBouncers;
}
