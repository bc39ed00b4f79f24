-- CrowdSec-compatible bouncers (issue 32 item 1): each agent key a bouncer polls
-- `v1/decisions/stream` with has its own cursor. The cursor is what this key's bouncer was last
-- sent, entry by entry, with the second until which its kernel keeps the entry at least (the
-- `duration` it was given, counted from the call): the next call sends what changed since, and
-- sends an entry again (in `deleted` and `new`) when Rampart will list it longer than that.
create table crowdsec_cursors (
  token_id text primary key references agent_tokens (jti) on delete cascade,
  agent_id bigint not null references agents (id) on delete cascade,
  last_call_at timestamptz not null default now(),
  last_startup_at timestamptz,
  -- The last `POST v1/usage-metrics` body of this key, as received (bounded by the body limit).
  usage_metrics jsonb,
  usage_metrics_at timestamptz
);
create index crowdsec_cursors_agent_idx on crowdsec_cursors (agent_id);

create table crowdsec_delivered (
  token_id text not null references crowdsec_cursors (token_id) on delete cascade,
  network cidr not null,
  indicator_id bigint not null,
  -- Epoch second until which the bouncer's kernel holds the entry at least.
  kept_until bigint not null,
  scenario text not null,
  primary key (token_id, network)
);
