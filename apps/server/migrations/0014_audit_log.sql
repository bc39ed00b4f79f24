-- Who did what, when and from where (issue 23 item 6): every alliance operator action and every
-- API key issued or revoked. `org_id` is the organization acted on: its admins read its entries;
-- operators read all. Actors are kept by name too, so an entry outlives a deleted user.
create table audit_log (
  id bigserial primary key,
  at timestamptz not null default now(),
  actor_user_id bigint references users (id) on delete set null,
  actor text not null,
  actor_org_id bigint references organizations (id) on delete set null,
  org_id bigint references organizations (id) on delete cascade,
  action text not null,
  target text not null default '',
  detail jsonb not null default '{}',
  address text not null default ''
);
create index audit_log_org_idx on audit_log (org_id, id);
