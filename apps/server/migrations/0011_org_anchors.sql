-- Per-organization re-delivery (decisions.md, Compatibility): a change that alters what one
-- organization computes for an indicator — its decision set, changed or cleared, or its
-- reserved_ips or blocking_roule — puts the record in that organization's feed again with a
-- newer `ts`. `ts` is also the decay anchor, so the re-delivered record carries the live score at
-- that second as its new `score`: the pair (ts, score) of an anchor row replaces the indicator's
-- own pair for that organization while it is newer (anchor.ts > indicator.ts). A later change
-- that moves the indicator's own `ts` (a report) overtakes it for every organization.
--
-- Every reader that shows or evaluates a record for an organization (feed, look-ups, lists,
-- STIX, console) uses the same effective pair; the in-process IPv4 list mirror follows the
-- anchors through change_xid like decisions (migration 0009).

create table ipv4_org_anchors (
  org_id bigint not null references organizations (id) on delete cascade,
  indicator_id bigint not null references ipv4_indicators (id) on delete cascade,
  ts bigint not null,
  score integer not null check (score between 1 and 1000),
  change_xid xid8,
  primary key (org_id, indicator_id)
);
create index ipv4_org_anchors_feed_idx on ipv4_org_anchors (org_id, ts, indicator_id);
create index ipv4_org_anchors_change_idx on ipv4_org_anchors (change_xid);
create trigger ipv4_org_anchors_stamp before insert or update on ipv4_org_anchors
  for each row execute function ipv4_list_stamp();

create table file_org_anchors (
  org_id bigint not null references organizations (id) on delete cascade,
  indicator_id bigint not null references file_indicators (id) on delete cascade,
  ts bigint not null,
  score integer not null check (score between 1 and 1000),
  primary key (org_id, indicator_id)
);
create index file_org_anchors_feed_idx on file_org_anchors (org_id, ts, indicator_id);

create table domain_org_anchors (
  org_id bigint not null references organizations (id) on delete cascade,
  indicator_id bigint not null references domain_indicators (id) on delete cascade,
  ts bigint not null,
  score integer not null check (score between 1 and 1000),
  primary key (org_id, indicator_id)
);
create index domain_org_anchors_feed_idx on domain_org_anchors (org_id, ts, indicator_id);

create table url_org_anchors (
  org_id bigint not null references organizations (id) on delete cascade,
  indicator_id bigint not null references url_indicators (id) on delete cascade,
  ts bigint not null,
  score integer not null check (score between 1 and 1000),
  primary key (org_id, indicator_id)
);
create index url_org_anchors_feed_idx on url_org_anchors (org_id, ts, indicator_id);
