import { z } from 'zod';

/*
 * The watcher side of CrowdSec's Local API (LAPI v1) as Rampart serves it under
 * `/api/v1/crowdsec/`: what a CrowdSec agent (`crowdsec -no-api`, version 1.4) sends when it
 * logs in, pushes alerts and beats its heart. Objects are loose: the agent sends many fields
 * Rampart does not use (`scenario_hash`, `labels`, `meta`, …) and newer versions add more.
 */

/** Most alerts one `POST v1/alerts` may carry (an agent sends what overflowed in one second). */
export const CROWDSEC_MAX_ALERTS = 5000;
/** Most events one alert may carry (a bucket's content: its capacity + 1 for the hub's scenarios). */
export const CROWDSEC_MAX_EVENTS = 1000;

const Text = (max: number) => z.string().max(max);

export const CrowdsecWatcherLogin = z
  .looseObject({
    machine_id: z.string().min(1).max(256).describe("The gaid of a registered Rampart agent of the organization"),
    password: z.string().min(1).max(8192).describe('One of that agent\'s keys (its api_jwt_key or one issued by POST /agents/{agid}/token)'),
    scenarios: z.array(Text(512)).max(2000).optional().describe('The scenarios the agent runs (recorded nowhere)'),
  })
  .meta({ description: 'CrowdSec watcher login (LAPI WatcherAuthRequest)' });
export type CrowdsecWatcherLogin = z.infer<typeof CrowdsecWatcherLogin>;

export const CrowdsecWatcherRegistration = z
  .looseObject({
    machine_id: z.string().min(1).max(256),
    password: z.string().min(1).max(8192),
  })
  .meta({ description: 'CrowdSec watcher registration (LAPI WatcherRegistrationRequest): accepted only for an agent already registered in Rampart, with one of its keys' });
export type CrowdsecWatcherRegistration = z.infer<typeof CrowdsecWatcherRegistration>;

export const CrowdsecWatcherToken = z
  .object({
    code: z.literal(200),
    expire: z.string().describe('RFC 3339 time at which the token expires'),
    token: z.string().describe('Bearer token for v1/alerts and v1/heartbeat'),
  })
  .meta({ description: 'CrowdSec watcher login answer (LAPI WatcherAuthResponse)' });
export type CrowdsecWatcherToken = z.infer<typeof CrowdsecWatcherToken>;

export const CrowdsecAlertSource = z.looseObject({
  scope: Text(64).describe('"Ip" or "Range" (other scopes are refused)'),
  value: Text(256),
  ip: Text(64).optional(),
  range: Text(64).optional(),
});
export type CrowdsecAlertSource = z.infer<typeof CrowdsecAlertSource>;

export const CrowdsecAlertEvent = z.looseObject({
  timestamp: Text(64).optional(),
  meta: z
    .array(z.looseObject({ key: Text(256), value: Text(4096) }))
    .max(256)
    .nullable()
    .optional(),
});

export const CrowdsecAlert = z
  .looseObject({
    scenario: z.string().min(1).max(256).describe('e.g. crowdsecurity/ssh-bf: decides the report source and confidence'),
    message: Text(4096).optional(),
    events_count: z.int().min(1).max(2_147_483_647),
    capacity: z.int().min(-1).max(2_147_483_647).optional().describe('The bucket capacity; the scenario overflows at capacity + 1 events'),
    start_at: Text(64),
    stop_at: Text(64),
    source: CrowdsecAlertSource,
    events: z.array(CrowdsecAlertEvent).max(CROWDSEC_MAX_EVENTS).nullable().optional(),
    decisions: z.array(z.unknown()).max(CROWDSEC_MAX_EVENTS).nullable().optional(),
    simulated: z.boolean().optional(),
  })
  .meta({ description: 'A CrowdSec alert (LAPI Alert); each becomes one report of the organization' });
export type CrowdsecAlert = z.infer<typeof CrowdsecAlert>;

export const CrowdsecAlertsBody = z.array(CrowdsecAlert).min(1).max(CROWDSEC_MAX_ALERTS);
export type CrowdsecAlertsBody = z.infer<typeof CrowdsecAlertsBody>;

export const CrowdsecAlertIds = z
  .array(z.string())
  .describe('One id per alert, in order: the id of the IPv4 indicator its report went to (LAPI answers alert ids as strings)');
export type CrowdsecAlertIds = z.infer<typeof CrowdsecAlertIds>;
