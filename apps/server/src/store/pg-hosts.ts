import { Socket } from 'node:net';

/*
 * A DATABASE_URL naming several hosts, as libpq takes it:
 *   postgres://user:pw@db1:5432,db2:5432/rampart?target_session_attrs=read-write
 * node-postgres connects to one host. Here every new connection (the pool's and the listener's)
 * goes to the host that last answered as the primary, and on a refused connection or, with
 * target_session_attrs=read-write, a host in recovery (a standby), the next connection tries the
 * next host. So after a standby is promoted the servers find it by themselves: requests answer
 * 503 with Retry-After until a connection reaches the new primary (docs/scaling.md).
 */

export interface PgHost {
  host: string;
  port: number;
}

export interface PgHostList {
  hosts: PgHost[];
  /** The URL with the first host only (what node-postgres parses for everything else). */
  url: string;
  /** target_session_attrs=read-write (or primary): a standby is skipped. */
  writable: boolean;
}

/** undefined for a URL with one host (node-postgres takes it as it is). */
export function parseHostList(connectionString: string): PgHostList | undefined {
  const m = /^(postgres(?:ql)?:\/\/(?:[^@/]*@)?)([^/?#]*)(.*)$/.exec(connectionString);
  if (!m || !m[2]!.includes(',')) return undefined;
  const hosts = m[2]!.split(',').map((part) => {
    const hp = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(part);
    if (!hp) throw new Error(`DATABASE_URL: cannot read host "${part}"`);
    return { host: hp[1]!.replace(/^\[|\]$/g, ''), port: Number(hp[2] ?? 5432) };
  });
  const rest = new URL(`x://h${m[3]!}`);
  const attrs = rest.searchParams.get('target_session_attrs') ?? 'any';
  if (!['any', 'read-write', 'primary'].includes(attrs)) throw new Error(`DATABASE_URL: target_session_attrs=${attrs} is not supported (any, read-write or primary)`);
  rest.searchParams.delete('target_session_attrs');
  const first = hosts[0]!;
  const query = rest.searchParams.toString();
  const url = `${m[1]}${first.host.includes(':') ? `[${first.host}]` : first.host}:${first.port}${rest.pathname}${query ? `?${query}` : ''}`;
  return { hosts, url, writable: attrs !== 'any' };
}

/** The error of a connection that reached a standby while the primary was asked for. */
export class StandbyError extends Error {
  readonly code = 'ESTANDBY';
  constructor(host: PgHost) {
    super(`${host.host}:${host.port} is in recovery (a standby); trying the next host`);
  }
}

/** Chooses the host of each new connection; see the module comment. */
export class HostSelector {
  private current = 0;

  constructor(private readonly list: PgHostList) {}

  get host(): PgHost {
    return this.list.hosts[this.current]!;
  }

  /** The next connection goes to the next host (after `failed`, unless another call moved on already). */
  next(failed: PgHost): void {
    if (this.host === failed) this.current = (this.current + 1) % this.list.hosts.length;
  }

  /** node-postgres `stream` option: a socket that connects to the chosen host, whatever it is told. */
  stream = (): Socket => {
    const socket = new Socket() as Socket & { rampartTarget?: PgHost };
    const target = this.host;
    socket.rampartTarget = target;
    const connect = socket.connect.bind(socket) as (port: number, host: string) => Socket;
    (socket as unknown as { connect: (port: number, host: string) => Socket }).connect = () => connect(target.port, target.host);
    socket.once('error', () => {
      if (!socket.remoteAddress) this.next(target);
    });
    return socket;
  };

  /** Checks a new connection (pool `onConnect`, and the listener's) when the primary is required. */
  async verify(client: { query(sql: string): Promise<{ rows: Array<{ standby?: boolean }> }>; connection?: unknown }): Promise<void> {
    if (!this.list.writable) return;
    const target = (client.connection as { stream?: { rampartTarget?: PgHost } } | undefined)?.stream?.rampartTarget ?? this.host;
    const res = await client.query('select pg_is_in_recovery() as standby');
    if (res.rows[0]?.standby) {
      this.next(target);
      throw new StandbyError(target);
    }
  }
}
