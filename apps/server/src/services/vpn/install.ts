import type { VpnInstallation } from '@rampart/contracts';
import type { VpnConfig } from '../../config-tools.ts';

export const VPN_INTERFACE = 'rampart';
export const MASKED_KEY = '********';

export interface InstallationInput {
  address: string;
  publicKey: string;
  /** null: the caller may not see it (not an admin); the config shows it masked. */
  privateKey: string | null;
  config: VpnConfig & { endpoint: string; serverPublicKey: string };
}

/** A complete wg-quick client configuration (one [Interface], one [Peer]). */
export function clientConfig(input: InstallationInput): string {
  const { config } = input;
  const lines = ['[Interface]', `PrivateKey = ${input.privateKey ?? MASKED_KEY}`, `Address = ${input.address}/32`];
  if (config.dns.length > 0) lines.push(`DNS = ${config.dns.join(', ')}`);
  lines.push('', '[Peer]', `PublicKey = ${config.serverPublicKey}`, `Endpoint = ${config.endpoint}`, `AllowedIPs = ${config.allowedIps.join(', ')}`);
  if (config.keepaliveSeconds > 0) lines.push(`PersistentKeepalive = ${config.keepaliveSeconds}`);
  return `${lines.join('\n')}\n`;
}

export function installation(input: InstallationInput): VpnInstallation {
  const file = `/etc/wireguard/${VPN_INTERFACE}.conf`;
  return {
    interface: VPN_INTERFACE,
    address: input.address,
    endpoint: input.config.endpoint,
    public_key: input.publicKey,
    server_public_key: input.config.serverPublicKey,
    private_key_shown: input.privateKey !== null,
    config: clientConfig(input),
    commands: [
      'sudo apt-get install wireguard-tools   # Debian/Ubuntu; other systems: https://www.wireguard.com/install/',
      `sudo install -m 600 /dev/null ${file}   # then paste the config into ${file}`,
      `sudo wg-quick up ${VPN_INTERFACE}`,
      `sudo systemctl enable wg-quick@${VPN_INTERFACE}   # reconnect at boot`,
      `sudo wg show ${VPN_INTERFACE}   # a recent handshake means the tunnel is up`,
      `sudo wg-quick down ${VPN_INTERFACE}   # to disconnect`,
    ],
    server_peer: `wg set <server-interface> peer ${input.publicKey} allowed-ips ${input.address}/32`,
  };
}
