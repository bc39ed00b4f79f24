-- Bulk import (issue 37 item 5): one key per (organization, kind, canonical value, import content
-- hash) an import reported, so the same content imported again reports nothing twice.
create table import_keys (
  org_id bigint not null references organizations (id) on delete cascade,
  key text not null,
  at timestamptz not null default now(),
  primary key (org_id, key)
);
