-- A decision on an IPv4 address or network nobody reported is a record of its organization
-- (decisions.md, Organizations): listed in its /ipv4 and /flat while it blocks, and delivered in
-- its /ips feed with score 0, its own gid and a ts that moves on every change (a clear keeps the
-- row with decision -1, so the feed delivers it once more with decision null).
--
-- `id` comes from the indicators' sequence, so decision records and indicators share one order
-- (lists page by id, the feed by (ts, id)); `gid` is the record's, and the indicator a first
-- report creates at that network takes it, so a follower that keys records by gid (the original
-- client) or by network (our agent) sees one record change rather than two disagree; `ts` is
-- the feed second of the decision's last change (or of a reserved_ips change overlapping it).
alter table ipv4_decisions
  add column id bigint not null default nextval('ipv4_indicators_id_seq'),
  add column gid text not null default 'RMP-RULE-GID-' || upper(replace(gen_random_uuid()::text, '-', '')),
  add column ts bigint not null default floor(extract(epoch from clock_timestamp()))::bigint;
update ipv4_decisions set ts = floor(extract(epoch from updated_at))::bigint;
create index ipv4_decisions_feed_idx on ipv4_decisions (org_id, ts, id);
create index ipv4_decisions_exact_idx on ipv4_decisions (network);
