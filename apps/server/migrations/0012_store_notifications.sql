-- Live events survive a replica's LISTEN outage (issue 18). NOTIFY reaches only the sessions
-- listening at commit: a replica whose LISTEN session was down (PostgreSQL restart, a dropped
-- connection, a network cut between it and the database while the others kept writing) never
-- hears what was published meanwhile — a decision never reaches its agents, a revoked agent key
-- keeps its socket. Every notification is therefore also written here, under an id it carries
-- in its payload; a replica whose listener comes back reads what it missed after the last id it
-- saw (store/pg-driver.ts). Rows older than an hour are deleted by the replicas as they publish.
-- PGlite delivers notifications in-process and never reads or writes this table.

create table store_notifications (
  id bigint generated always as identity primary key,
  channel text not null,
  payload text not null,
  at timestamptz not null default now()
);

create index store_notifications_at on store_notifications (at);
