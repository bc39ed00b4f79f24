-- Settings documents, versioned: the current one per subject plus an audit of every change.
create table organization_settings (
  org_id bigint primary key references organizations (id) on delete cascade,
  document jsonb not null,
  version integer not null default 1,
  updated_at timestamptz not null default now(),
  updated_by text not null default ''
);

-- Who changed which settings document, when, and which fields (secrets never stored here).
create table settings_audit (
  id bigserial primary key,
  org_id bigint not null references organizations (id) on delete cascade,
  subject text not null,
  version integer not null,
  changed_by text not null,
  changed_at timestamptz not null default now(),
  changed_fields text[] not null default '{}'
);
create index settings_audit_subject_idx on settings_audit (org_id, subject, id);
