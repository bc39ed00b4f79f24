-- Agents registered by an organization. The settings document (2.11 + running) is owned by the
-- agents work; check-ins come from /ipv4?agid=, /agents/feedback and the sync channel.
create table agents (
  id bigserial primary key,
  org_id bigint not null references organizations (id) on delete cascade,
  gaid text not null unique,
  document jsonb not null,
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  last_checkin_at timestamptz,
  last_checkin_via text,
  last_plugin text,
  enforced jsonb
);
create index agents_org_idx on agents (org_id);

-- Keys every replica must share (list cursors, agent token signing), made once at random.
create table server_secrets (
  name text primary key,
  value text not null,
  created_at timestamptz not null default now()
);
