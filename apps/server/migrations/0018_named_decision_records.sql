-- A decision on a file digest, domain or URL nobody reported is a record of its organization, as
-- on IPv4 (0017, decisions.md, Organizations): listed in its score lists while it blacklists, and
-- delivered in its feed with score 0 and a ts that moves on every change (a clear keeps the row
-- with decision -1, so the feed delivers it once more with decision null).
--
-- `id` comes from the kind's indicators' sequence, so decision records and indicators share one
-- order (score lists page by id, feeds by (ts, id)); `ts` is the feed second of the decision's last
-- change. Rows decided before this migration take the migration's second: a follower whose cursor
-- is past their old change gets them once.
alter table file_decisions
  add column id bigint not null default nextval('file_indicators_id_seq'),
  add column ts bigint not null default floor(extract(epoch from clock_timestamp()))::bigint;
create index file_decisions_feed_idx on file_decisions (org_id, ts, id);

alter table domain_decisions
  add column id bigint not null default nextval('domain_indicators_id_seq'),
  add column ts bigint not null default floor(extract(epoch from clock_timestamp()))::bigint;
create index domain_decisions_feed_idx on domain_decisions (org_id, ts, id);

alter table url_decisions
  add column id bigint not null default nextval('url_indicators_id_seq'),
  add column ts bigint not null default floor(extract(epoch from clock_timestamp()))::bigint;
create index url_decisions_feed_idx on url_decisions (org_id, ts, id);
