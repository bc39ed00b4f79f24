-- Organizations, users, API keys: the tenants of the platform and who acts for them.
create table organizations (
  id bigserial primary key,
  gid text not null unique,
  name text not null unique,
  trust double precision not null default 0.5 check (trust >= 0 and trust <= 1),
  delay text not null default '0',
  credit_tokens bigint not null default 0 check (credit_tokens >= 0),
  debit_tokens bigint not null default 0 check (debit_tokens >= 0),
  is_public integer not null default 0 check (is_public in (0, 1)),
  created_at timestamptz not null default now()
);

create table users (
  id bigserial primary key,
  guid text not null unique,
  org_id bigint not null references organizations (id) on delete cascade,
  name text not null default '',
  surname text not null default '',
  username text not null unique,
  role integer not null check (role in (1, 2, 3, 9)),
  unsuccessful_login integer not null default 0,
  created_at timestamptz not null default now()
);
create index users_org_idx on users (org_id);

-- A key is `rmp_<key_id>_<secret>`; only sha256(secret) is stored. key_id is public and
-- lets a wrong secret be counted against the user it was aimed at.
create table api_keys (
  id bigserial primary key,
  key_id text not null unique,
  user_id bigint not null references users (id) on delete cascade,
  secret_hash text not null,
  label text not null default '',
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index api_keys_user_idx on api_keys (user_id);
