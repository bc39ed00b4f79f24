import { NetnsLab, type ProbeResult } from './netns-lab.ts';

/*
 * client (198.51.100.10 and .20) ── fw (198.51.100.1 | 203.0.113.1, forwarding) ── server (203.0.113.2)
 * with a TCP listener on 8080 in fw and in server: the input hook is exercised by client → fw,
 * the forward hook by client → server through fw. Shared by the packet-filter enforcers' tests.
 */

export const TOPOLOGY = {
  listed: '198.51.100.10',
  unlisted: '198.51.100.20',
  fwAddress: '198.51.100.1',
  serverAddress: '203.0.113.2',
  port: 8080,
} as const;

export type Reachability = Record<'in-listed' | 'in-unlisted' | 'fwd-listed' | 'fwd-unlisted', ProbeResult>;

export interface FirewallTopology {
  lab: NetnsLab;
  client: string;
  fw: string;
  server: string;
  /**
   * Probes the four paths. Sources in `open` are expected to pass and are retried until they do
   * (or a deadline passes); the others get one probe, whose timeout is the drop.
   */
  reachability(open: readonly string[]): Promise<Reachability>;
  /** The Reachability where exactly the sources in `open` pass. */
  expectOpen(open: readonly string[]): Reachability;
}

export async function firewallTopology(): Promise<FirewallTopology> {
  const lab = new NetnsLab();
  const { listed, unlisted, fwAddress, serverAddress, port } = TOPOLOGY;
  try {
    const client = await lab.namespace('cli');
    const fw = await lab.namespace('fw');
    const server = await lab.namespace('srv');
    await lab.link({ ns: client, dev: 'eth0', addresses: [`${listed}/24`, `${unlisted}/24`] }, { ns: fw, dev: 'lan', addresses: [`${fwAddress}/24`] });
    await lab.link({ ns: fw, dev: 'wan', addresses: ['203.0.113.1/24'] }, { ns: server, dev: 'eth0', addresses: [`${serverAddress}/24`] });
    await lab.exec(client, ['ip', 'route', 'add', 'default', 'via', fwAddress]);
    await lab.exec(server, ['ip', 'route', 'add', 'default', 'via', '203.0.113.1']);
    await lab.exec(fw, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    await lab.listen(fw, port);
    await lab.listen(server, port);
    const paths = [
      ['in-listed', listed, fwAddress],
      ['in-unlisted', unlisted, fwAddress],
      ['fwd-listed', listed, serverAddress],
      ['fwd-unlisted', unlisted, serverAddress],
    ] as const;
    return {
      lab,
      client,
      fw,
      server,
      async reachability(open) {
        const out = {} as Reachability;
        for (const [label, source, host] of paths) {
          out[label] = open.includes(source) ? await lab.probeUntil('open', client, source, host, port) : await lab.probe(client, source, host, port);
        }
        return out;
      },
      expectOpen(open) {
        const out = {} as Reachability;
        for (const [label, source] of paths) out[label] = open.includes(source) ? 'open' : 'timeout';
        return out;
      },
    };
  } catch (err) {
    await lab.destroy();
    throw err;
  }
}
