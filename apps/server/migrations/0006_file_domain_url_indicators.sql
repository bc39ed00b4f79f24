-- File, domain and URL indicators: the IPv4 model of 0002 (s0 score, `ts` as decay anchor and
-- feed cursor from feed_clock, reports merged per organization, decisions per organization).

-- Digests are stored as bytes (half the size of hex) and are null until a reporter gives them;
-- each digest names at most one file.
create table file_indicators (
  id bigserial primary key,
  md5 bytea unique check (octet_length(md5) = 16),
  sha1 bytea unique check (octet_length(sha1) = 20),
  sha256 bytea unique check (octet_length(sha256) = 32),
  file_type text not null,
  file_name text not null default '',
  -- At most the first 64 KiB of the sample.
  file_bytes bytea check (octet_length(file_bytes) <= 65536),
  score integer not null check (score between 1 and 1000),
  ts bigint not null,
  entry_ts bigint not null,
  members integer not null default 0,
  events integer not null default 0,
  tags text[] not null default '{}',
  check (md5 is not null or sha1 is not null or sha256 is not null)
);
create index file_indicators_feed_idx on file_indicators (ts, id);
create index file_indicators_score_idx on file_indicators (score);

create table file_reports (
  indicator_id bigint not null references file_indicators (id) on delete cascade,
  org_id bigint not null references organizations (id) on delete cascade,
  confidence double precision not null check (confidence >= 0 and confidence <= 1),
  events integer not null default 1 check (events >= 1),
  first_ts bigint not null,
  last_ts bigint not null,
  primary key (indicator_id, org_id)
);

-- A decision names one digest; it applies to the file that carries that digest.
create table file_decisions (
  org_id bigint not null references organizations (id) on delete cascade,
  digest bytea not null,
  decision smallint not null check (decision in (-1, 0, 1)),
  updated_at timestamptz not null default now(),
  primary key (org_id, digest)
);

-- The larger, read-only store searched by `deep_scan=YES`: historical digests imported in bulk.
create table file_archive (
  id bigserial primary key,
  md5 bytea not null check (octet_length(md5) = 16),
  sha1 bytea not null check (octet_length(sha1) = 20),
  sha256 bytea not null check (octet_length(sha256) = 32),
  file_type text not null,
  file_name text not null default '',
  score integer not null check (score between 1 and 1000),
  ts bigint not null,
  entry_ts bigint not null,
  members integer not null default 1,
  events integer not null default 1,
  tags text[] not null default '{}'
);
create index file_archive_md5_idx on file_archive (md5);
create index file_archive_sha1_idx on file_archive (sha1);
create index file_archive_sha256_idx on file_archive (sha256);

-- Domains and URLs are kept in their normalized form (services/indicator-names.ts), so one
-- indicator is one row.
create table domain_indicators (
  id bigserial primary key,
  value text not null unique,
  score integer not null check (score between 1 and 1000),
  ts bigint not null,
  entry_ts bigint not null,
  members integer not null default 0,
  events integer not null default 0,
  tags text[] not null default '{}'
);
create index domain_indicators_feed_idx on domain_indicators (ts, id);
create index domain_indicators_score_idx on domain_indicators (score);

create table domain_reports (
  indicator_id bigint not null references domain_indicators (id) on delete cascade,
  org_id bigint not null references organizations (id) on delete cascade,
  confidence double precision not null check (confidence >= 0 and confidence <= 1),
  events integer not null default 1 check (events >= 1),
  first_ts bigint not null,
  last_ts bigint not null,
  primary key (indicator_id, org_id)
);

create table domain_decisions (
  org_id bigint not null references organizations (id) on delete cascade,
  value text not null,
  decision smallint not null check (decision in (-1, 0, 1)),
  updated_at timestamptz not null default now(),
  primary key (org_id, value)
);

create table url_indicators (
  id bigserial primary key,
  value text not null unique,
  score integer not null check (score between 1 and 1000),
  ts bigint not null,
  entry_ts bigint not null,
  members integer not null default 0,
  events integer not null default 0,
  tags text[] not null default '{}'
);
create index url_indicators_feed_idx on url_indicators (ts, id);
create index url_indicators_score_idx on url_indicators (score);

create table url_reports (
  indicator_id bigint not null references url_indicators (id) on delete cascade,
  org_id bigint not null references organizations (id) on delete cascade,
  confidence double precision not null check (confidence >= 0 and confidence <= 1),
  events integer not null default 1 check (events >= 1),
  first_ts bigint not null,
  last_ts bigint not null,
  primary key (indicator_id, org_id)
);

create table url_decisions (
  org_id bigint not null references organizations (id) on delete cascade,
  value text not null,
  decision smallint not null check (decision in (-1, 0, 1)),
  updated_at timestamptz not null default now(),
  primary key (org_id, value)
);
