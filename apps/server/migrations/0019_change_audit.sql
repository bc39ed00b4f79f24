-- Who decided what, and why (issue 37 item 1). Every decision row keeps the reason given with its
-- last change and who made it (a username, or `cli:<account>` for the host CLI); the audit log
-- records the key an actor used and is filtered by actor and time as well as organization and
-- action.
alter table ipv4_decisions add column reason text, add column set_by text;
alter table file_decisions add column reason text, add column set_by text;
alter table domain_decisions add column reason text, add column set_by text;
alter table url_decisions add column reason text, add column set_by text;

alter table audit_log add column actor_key text not null default '';
create index audit_log_at_idx on audit_log (at, id);
create index audit_log_actor_idx on audit_log (actor, id);
