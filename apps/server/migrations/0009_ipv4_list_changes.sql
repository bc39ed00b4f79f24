-- Change tracking for the in-process mirror of the IPv4 lists (services/ipv4-mirror.ts).
--
-- Every inserted or updated indicator and decision row carries the id of the transaction that
-- wrote it last (`change_xid`), and every deleted row leaves a tombstone carrying the deleting
-- transaction's id. A mirror that caught up at a snapshot whose xmin was X has seen every
-- transaction below X; the next catch-up reads the rows with change_xid >= X (rows of
-- transactions still running then are read again later; re-reading a row is harmless), so no
-- committed change is missed however long a writer runs. Rows written before this migration
-- keep a null change_xid: the mirror's initial load reads every row.

alter table ipv4_indicators add column change_xid xid8;
alter table ipv4_decisions add column change_xid xid8;
create index ipv4_indicators_change_idx on ipv4_indicators (change_xid);
create index ipv4_decisions_change_idx on ipv4_decisions (change_xid);

-- kind 1: an indicator (indicator_id) was deleted; 2: a decision (org_id, network);
-- 0: a table was truncated (a mirror reloads everything).
create table ipv4_list_deletions (
  kind smallint not null check (kind in (0, 1, 2)),
  indicator_id bigint,
  org_id bigint,
  network cidr,
  change_xid xid8 not null default pg_current_xact_id()
);
create index ipv4_list_deletions_change_idx on ipv4_list_deletions (change_xid);

create function ipv4_list_stamp() returns trigger language plpgsql as $$
begin
  new.change_xid := pg_current_xact_id();
  return new;
end
$$;

create function ipv4_list_indicator_deleted() returns trigger language plpgsql as $$
begin
  insert into ipv4_list_deletions (kind, indicator_id) values (1, old.id);
  return old;
end
$$;

create function ipv4_list_decision_deleted() returns trigger language plpgsql as $$
begin
  insert into ipv4_list_deletions (kind, org_id, network) values (2, old.org_id, old.network);
  return old;
end
$$;

create function ipv4_list_truncated() returns trigger language plpgsql as $$
begin
  insert into ipv4_list_deletions (kind) values (0);
  return null;
end
$$;

create trigger ipv4_indicators_stamp before insert or update on ipv4_indicators
  for each row execute function ipv4_list_stamp();
create trigger ipv4_decisions_stamp before insert or update on ipv4_decisions
  for each row execute function ipv4_list_stamp();
create trigger ipv4_indicators_deleted after delete on ipv4_indicators
  for each row execute function ipv4_list_indicator_deleted();
create trigger ipv4_decisions_deleted after delete on ipv4_decisions
  for each row execute function ipv4_list_decision_deleted();
create trigger ipv4_indicators_truncated after truncate on ipv4_indicators
  for each statement execute function ipv4_list_truncated();
create trigger ipv4_decisions_truncated after truncate on ipv4_decisions
  for each statement execute function ipv4_list_truncated();
