/* Realistic sample documents shared by the tests of this package (not part of the public surface). */

export const sampleMemberOf = {
  gid: 'RMP-GID-7F3A9C21B04E4D1D',
  name: 'Example Alliance Member',
  trust: 0.85,
  delay: '0',
};

export const sampleUser = {
  guid: 'RMP-GUID-2B9E04C7D1A84F3E',
  name: 'Ada',
  surname: 'Lovelace',
  username: 'ada@example.org',
  role: 2,
  unsuccessful_login: 0,
  member_of: sampleMemberOf,
};

export const sampleFeedUser = {
  ...sampleUser,
  member_of: { ...sampleMemberOf, credit_tokens: 100000, debit_tokens: 1234 },
};

export const sampleIpv4Record = {
  gid: 'RMP-RULE-GID-0C2F66A1E9B24B7A',
  ip: '203.0.113.7',
  ts: 1717171717,
  entry_ts: 1717000000,
  is_network: false,
  ip_info: {
    as_domain: 'example.net',
    as_name: 'Example Transit',
    asn: 'AS64500',
    continent: 'EU',
    continent_name: 'Europe',
    country: 'NL',
    country_name: 'Netherlands',
  },
  score: 420,
  info: {
    members: 3,
    events: 17,
    sources: ['ssh_log', 'waf_log'],
    stix_bundles: [],
    attack_infos: [],
    notes: ['brute force on port 22'],
  },
  elk_ts: '2024-05-31T16:08:37.000Z',
  elk_entry_ts: '2024-05-29T16:53:20.000Z',
  delay: 0,
  dec: 418.27,
  decision: null,
  ttl: null,
};

export const sampleIpv4Page = {
  header: {
    type: 'IPv4',
    version: 2,
    ts: '1717171000',
    next_ts: 1717171717,
    page_size: 50,
    delay: 0,
    eval: 'return scoreTimeZero / (1 + Math.exp((3 / scoreTimeZero) * (current_time / 3600 - 2.5 * scoreTimeZero)));',
    exec_python: 'scoreTimeZero / (1 + math.exp((3 / scoreTimeZero) * (current_time / 3600 - 2.5 * scoreTimeZero)))',
    user: sampleUser,
  },
  body: [sampleIpv4Record],
};

const indicatorFields = {
  score: 730,
  ts: 1717171717,
  total_reports: 4,
  total_members: 2,
  tags: ['malware', 'emotet'],
  elk_ts: '2024-05-31T16:08:37.000Z',
  elk_entry_ts: '2024-05-29T16:53:20.000Z',
  entry_ts: 1717000000,
  decision: null,
};

export const sampleFileRecord = {
  md5: '44D88612FEA8A8F36DE82E1278ABB02F',
  sha1: '3395856CE81F2B7382DEE72602F798B642F14140',
  sha256: '275A021BBFB6489E54D471899F7DB9D1663FC695EC2FE2A2C4538AABF651FD0F',
  file_bytes: null,
  file_type: 'application/x-dosexec',
  file_name: 'invoice.exe',
  ...indicatorFields,
};

export const sampleDomainRecord = { domain: 'malicious.example.com', ...indicatorFields };
export const sampleUrlRecord = { url: 'https://malicious.example.com/login.php?id=1', ...indicatorFields };

const feedHeader = (type: string) => ({
  type,
  version: 4,
  ts: 1717000000,
  next_ts: 1717171717,
  page_size: 101,
  user: sampleFeedUser,
});

export const sampleFilePage = { header: feedHeader('Malware'), body: [sampleFileRecord] };
export const sampleDomainPage = { header: feedHeader('Domain'), body: [sampleDomainRecord] };
export const sampleUrlPage = { header: feedHeader('URL'), body: [sampleUrlRecord] };

export const sampleVersion = {
  version: '2024-06-01',
  is_master: 'true',
  application: 'rampart',
  RMP_instance: 'docker',
  hostname: 'rampart-1',
  m: 1,
  e: 'production',
};

export const sampleFileType = {
  name: 'application/pdf',
  description: 'Portable Document Format<br>Adobe',
  types: ['pdf'],
  alternatives: [],
  furtherReading: [{ title: 'PDF', url: 'https://en.wikipedia.org/wiki/PDF' }],
};

export const sampleCdn = { name: 'Example CDN', addresses: ['198.51.100.0/24', '192.0.2.10', '2001:db8::/32'] };

export const sampleIpMetadata = {
  status: 'success',
  continent: 'Europe',
  continentCode: 'EU',
  country: 'Netherlands',
  countryCode: 'NL',
  region: 'NH',
  regionName: 'North Holland',
  city: 'Amsterdam',
  district: '',
  zip: '1012',
  lat: 52.3676,
  lon: 4.9041,
  timezone: 'Europe/Amsterdam',
  offset: 7200,
  currency: 'EUR',
  isp: 'Example Transit',
  org: 'Example Hosting',
  as: 'AS64500 Example Transit',
  asname: 'EXAMPLE-TRANSIT',
  reverse: 'host.example.net',
  mobile: false,
  proxy: false,
  hosting: true,
  query: '203.0.113.7',
};

export const sampleVpnLicense = {
  vid: 'RMP-VID-LIC9A1B2C3D4E5F',
  account_name: 'laptop-ada',
  notes: 'travel laptop',
  ts: 1717171717,
  user: { ...sampleFeedUser, member_of: { ...sampleFeedUser.member_of, is_public: 0 } },
  mgid: 'RMP-GID-7F3A9C21B04E4D1D',
  exist: true,
};

export const sampleIds = {
  packet_filter: { active: false },
  bridge_filter: { active: false },
  pf_list: { active: false },
  waf_log: { active: true, waf_logs: '/var/log/modsec_audit.log' },
  cdn_waf: { active: false, cdn_waf_x_auth_email: 'ops@example.org', cdn_waf_x_auth_key: 'cdn-key-123' },
  json_source: { active: false, json: [] },
  ssh_log: { active: true, ssh_log_location: '/var/log/auth.log' },
};

export const sampleIps = {
  web_server_list: { active: false, command: 'nginx -s reload' },
  packet_filter: { active: true, acl: '/etc/nftables.d/rampart.nft', reload_command: 'nft -f /etc/nftables.conf' },
  firewall_mgmt_a: {
    active: false,
    username: 'admin',
    password: 'mgmt-pass',
    address: '10.0.0.2',
    group: 'rampart-blocked',
    policy: 'Standard',
    domain: 'SMC',
    gateways: 'gw1,gw2',
  },
  firewall_accel_a: { active: false, connections: '10.0.0.3', password: 'accel-pass', command: 'fw samp', vsids: '0,1,2' },
  firewall_b: { active: false, connections: '10.0.0.4', password: 'b-pass', command: 'refresh', feeds: 'rampart', updates: '5' },
  csp: { active: false, connections: '10.0.0.5', password: 'csp-pass', command: 'sync', feeds: 'rampart', updates: '10' },
  bridge_filter: { active: false },
  pf_list: { active: false, RMP_ips_txt: '/etc/pf/rampart_ips.txt', pflist_reload_command: 'pfctl -t rampart -T replace -f /etc/pf/rampart_ips.txt' },
  waf: { active: false, ruleset: '/etc/modsecurity/rampart.conf', waf_reload_command: 'systemctl reload apache2' },
  cdn_waf: { active: false, cdn_waf_x_auth_email: 'ops@example.org', cdn_waf_x_auth_key: 'cdn-key-456' },
  router_a: { active: false, router_host: '192.0.2.1', router_user: 'admin', router_password: 'router-pass' },
  proxy_lb: { active: false, lb_logs: '/var/log/haproxy.log', lb_reload_command: 'systemctl reload haproxy' },
  csv: { active: false, csv_logs: '/var/lib/rampart/blocked.csv', csv_reload_command: '' },
  cloud_a: { active: false, accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'cloud-secret', region: 'eu-west-1' },
  firewall_c: { active: false, user: 'admin', password: 'c-pass', address: '10.0.0.6', command: 'commit' },
  endpoint_d: {
    active: false,
    username: 'svc',
    password: 'd-pass',
    api: 'https://edr.example.org/api',
    fileslist_file: '/var/lib/rampart/files.txt',
    broker_ca_bundle: '/etc/ssl/broker-ca.pem',
    cert_file: '/etc/ssl/client.pem',
    private_key: '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----',
  },
  dns_e: {
    active: false,
    username: 'svc',
    password: 'e-pass',
    api: 'https://dns.example.org/api',
    group: 'rampart',
    policy: 'block',
    action: 'deny',
    view: 'default',
    domains_file: '/var/lib/rampart/domains.txt',
    domains_file_whitelist: '/var/lib/rampart/domains-allow.txt',
    api_whitelist_url: 'https://dns.example.org/api/allow',
  },
  proxy_f: {
    active: false,
    username: 'svc',
    password: 'f-pass',
    api: 'https://proxy.example.org/api',
    group: 'rampart',
    policy: 'block',
    action: 'deny',
    parent: null,
    urls_file: '/var/lib/rampart/urls.txt',
  },
};

export const sampleAgentConfig = {
  gaid: 'RMP-AGENT-ID-4F2A9C7E1B',
  ts: 1717171717000,
  score_threshold: 500,
  start_from: 0,
  version: 'v3.2.1',
  proxy: 'CLOUD',
  sync_time: 5,
  maximum_rules: 10000,
  api_url: 'https://rampart.example.org/api/v1/ips',
  api_url_bulk: 'https://rampart.example.org/api/v1/ipv4/500',
  api_url_feedback: 'https://rampart.example.org/api/v1/agents/feedback',
  auth_name: 'Authorization',
  api_jwt_key: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJl',
  ids: sampleIds,
  ips: sampleIps,
};
