// Apart from dxl-client.ts: the config schema checks the address, and the agent loads the schema
// at start but the MQTT client only when an `endpoint_d` enforcer is created.

/** `host`, `host:port`, `ssl://host:port` or `mqtts://host:port` (port 8883 by default). */
export function parseBrokerAddress(address: string): { host: string; port: number } | undefined {
  const m = /^(?:(?:ssl|mqtts):\/\/)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?\/?$/.exec(address.trim());
  if (!m) return undefined;
  const port = m[2] === undefined ? 8883 : Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}
