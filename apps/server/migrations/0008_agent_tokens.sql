-- Agent keys: signed JWTs whose id (jti) is recorded here so that one token can be revoked,
-- and agent deactivation, which revokes every token of the agent at once.
create table agent_tokens (
  jti text primary key,
  agent_id bigint not null references agents (id) on delete cascade,
  issued_by bigint references users (id) on delete set null,
  issued_at timestamptz not null default now(),
  expires_at timestamptz,
  revoked_at timestamptz
);
create index agent_tokens_agent_idx on agent_tokens (agent_id);

-- What the agent itself reports (feedback and the sync channel), apart from its settings.
alter table agents
  add column deactivated_at timestamptz,
  add column reported_version text,
  add column hostname text;

-- Look-ups of one organization's history of one settings document, newest first.
create index settings_audit_subject_version_idx on settings_audit (org_id, subject, version);
