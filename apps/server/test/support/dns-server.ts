import { createSocket, type Socket } from 'node:dgram';
import dns2 from 'dns2';

const { Packet } = dns2;

/** Names a test DNS server knows: A addresses, PTR names; anything else is NXDOMAIN. */
export interface Zone {
  a?: Record<string, string[]>;
  ptr?: Record<string, string>;
  /** Names answered with SERVFAIL (a broken upstream). */
  servfail?: string[];
}

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, as DNS_SERVERS takes it. */
  address: string;
  /** Questions received, `<type> <name>` each. */
  questions: string[];
  close(): Promise<void>;
}

/** A real DNS server on 127.0.0.1 (UDP, a random port) answering from `zone`. */
export async function startDnsServer(zone: Zone): Promise<TestDnsServer> {
  const questions: string[] = [];
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const question = request.questions[0]!;
      const name = question.name.toLowerCase();
      questions.push(`${question.type === Packet.TYPE.PTR ? 'PTR' : question.type === Packet.TYPE.A ? 'A' : question.type} ${name}`);
      const addresses = zone.a?.[name];
      const ptr = zone.ptr?.[name];
      if (zone.servfail?.includes(name)) {
        response.header.rcode = Packet.RCODE.SERVFAIL;
      } else if (addresses === undefined && ptr === undefined) {
        response.header.rcode = Packet.RCODE.NXDOMAIN;
      } else if (question.type === Packet.TYPE.A && addresses) {
        for (const address of addresses) response.answers.push(Packet.createResourceFromQuestion(question, { type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 60, address }));
      } else if (question.type === Packet.TYPE.PTR && ptr) {
        response.answers.push(Packet.createResourceFromQuestion(question, { type: Packet.TYPE.PTR, class: Packet.CLASS.IN, ttl: 60, domain: ptr }));
      }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  return { address: `127.0.0.1:${addresses.udp!.port}`, questions, close: () => server.close() };
}

/** A UDP socket on 127.0.0.1 that reads queries and never answers (a resolver timing out). */
export async function startSilentDnsServer(): Promise<{ address: string; queries: () => number; close(): Promise<void> }> {
  const socket: Socket = createSocket('udp4');
  let count = 0;
  socket.on('message', () => {
    count += 1;
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries: () => count,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
