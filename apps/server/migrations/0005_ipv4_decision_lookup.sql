-- Every IPv4 record, list line and look-up asks for the most specific decision of the caller's
-- organization covering the indicator (`network >>= indicator`). The primary key (org_id, network)
-- cannot answer containment, so without this index that question scans all of the
-- organization's decisions once per row.
create index ipv4_decisions_network_idx on ipv4_decisions using gist (network inet_ops);
