import { formatIpv4, parseIpv4 } from '@rampart/contracts';

export interface VpnPool {
  cidr: string;
  /** The server's own tunnel address: the first host of the pool. */
  serverAddress: string;
  /** How many clients the pool can hold. */
  capacity: number;
  /** Client addresses in allocation order: second host to the last before broadcast. */
  candidates(): Iterable<string>;
}

export function vpnPool(cidr: string): VpnPool {
  const range = parseIpv4(cidr);
  if (!range || range.end - range.start < 3) throw new Error(`VPN pool ${cidr} holds no client address`);
  const { start, end } = range;
  return {
    cidr: `${formatIpv4(start)}/${cidr.split('/')[1]}`,
    serverAddress: formatIpv4(start + 1),
    capacity: end - start - 2,
    *candidates() {
      for (let n = start + 2; n < end; n++) yield formatIpv4(n);
    },
  };
}
