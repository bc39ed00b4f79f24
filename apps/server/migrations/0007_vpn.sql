-- Secure-VPN licenses (spec 4.6, record 2.10). One WireGuard server serves every organization,
-- so an address of the pool belongs to at most one ACTIVE license across all of them (the partial
-- unique index); a deactivated license keeps its row (exist = false) and frees its address.
create table vpn_licenses (
  id bigserial primary key,
  vid text not null unique,
  org_id bigint not null references organizations (id) on delete cascade,
  created_by bigint not null references users (id),
  account_name text not null,
  notes text not null default '',
  address inet not null,
  public_key text not null,
  -- AES-256-GCM of the client's private key (services/vpn-keys.ts); '' once deactivated.
  private_key_enc text not null,
  created_at timestamptz not null default now(),
  deactivated_at timestamptz,
  deactivated_by bigint references users (id)
);
create unique index vpn_licenses_active_address_uidx on vpn_licenses (address) where deactivated_at is null;
create index vpn_licenses_org_active_idx on vpn_licenses (org_id, created_at, id) where deactivated_at is null;
