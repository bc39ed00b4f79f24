-- IPv4 indicators, the reports that make their scores, and per-organization decisions.

-- One row, locked by every writer that moves a record's `ts`. It hands out non-decreasing
-- seconds and orders commits by `ts`, so a feed reader that waits for the lock knows no
-- record with a smaller `ts` can still appear (decisions.md: every record, none twice).
create table feed_clock (
  id integer primary key check (id = 1),
  ts bigint not null
);
insert into feed_clock (id, ts) values (1, 0);

create table ipv4_indicators (
  id bigserial primary key,
  gid text not null unique,
  network cidr not null unique,
  is_network boolean not null,
  -- s0: the score at time zero; `ts` is time zero (the decay anchor) and the feed cursor.
  score integer not null check (score between 1 and 1000),
  ts bigint not null,
  entry_ts bigint not null,
  members integer not null default 0,
  events integer not null default 0,
  sources text[] not null default '{}',
  notes text[] not null default '{}',
  tags text[] not null default '{}',
  ip_info jsonb,
  updated_at timestamptz not null default now()
);
create index ipv4_indicators_feed_idx on ipv4_indicators (ts, id);
create index ipv4_indicators_network_idx on ipv4_indicators using gist (network inet_ops);

-- Reports merge per (indicator, organization): repeats count events and keep the latest confidence.
create table ipv4_reports (
  indicator_id bigint not null references ipv4_indicators (id) on delete cascade,
  org_id bigint not null references organizations (id) on delete cascade,
  confidence double precision not null check (confidence >= 0 and confidence <= 1),
  events integer not null default 1 check (events >= 1),
  first_ts bigint not null,
  last_ts bigint not null,
  sources text[] not null default '{}',
  primary key (indicator_id, org_id)
);

-- A decision of one organization about an address or network, whether or not it is an indicator.
create table ipv4_decisions (
  org_id bigint not null references organizations (id) on delete cascade,
  network cidr not null,
  decision smallint not null check (decision in (-1, 0, 1)),
  ttl bigint,
  updated_at timestamptz not null default now(),
  primary key (org_id, network)
);
