-- Figures over time for the console (issue 23 item 3), stored as they happen instead of being
-- recomputed for every view. One row per organization and UTC hour (or day); `hour` and `day`
-- are epoch seconds of the bucket's start. Rows older than the retention (31 days) are deleted
-- by the server's rollup job (services/rollups.ts).
--
-- Reports and coins are additive: each replica adds what it counted since its last flush.
-- Agents alive and indicators per band are samples: a new sample of the same bucket replaces
-- (bands: the day's latest snapshot) or raises (agents: the hour's highest count) the stored one,
-- so the replicas that all take them write the same rows, and a sample taken twice changes nothing.
create table rollup_reports_hourly (
  org_id bigint not null references organizations (id) on delete cascade,
  hour bigint not null,
  reports bigint not null check (reports >= 0),
  primary key (org_id, hour)
);

create table rollup_coins_daily (
  org_id bigint not null references organizations (id) on delete cascade,
  day bigint not null,
  coins bigint not null check (coins >= 0),
  primary key (org_id, day)
);

create table rollup_agents_hourly (
  org_id bigint not null references organizations (id) on delete cascade,
  hour bigint not null,
  alive integer not null check (alive >= 0),
  active integer not null check (active >= 0),
  primary key (org_id, hour)
);

-- IPv4 indicators the organization sees (its delay applied) by their live score in its own bands.
create table rollup_bands_daily (
  org_id bigint not null references organizations (id) on delete cascade,
  day bigint not null,
  low integer not null,
  medium integer not null,
  high integer not null,
  critical integer not null,
  at bigint not null,
  primary key (org_id, day)
);
