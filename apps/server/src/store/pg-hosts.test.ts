import { describe, expect, it } from 'vitest';
import { HostSelector, parseHostList } from './pg-hosts.ts';

describe('parseHostList', () => {
  it('leaves a one-host URL to node-postgres', () => {
    expect(parseHostList('postgres://u:p@db:5432/rampart')).toBeUndefined();
  });

  it('reads hosts, ports (5432 by default), IPv6 and target_session_attrs, and keeps the rest of the URL', () => {
    expect(parseHostList('postgres://u:p@db1:5433,db2,[::1]:6000/rampart?sslmode=disable&target_session_attrs=read-write')).toEqual({
      hosts: [
        { host: 'db1', port: 5433 },
        { host: 'db2', port: 5432 },
        { host: '::1', port: 6000 },
      ],
      url: 'postgres://u:p@db1:5433/rampart?sslmode=disable',
      writable: true,
    });
    expect(parseHostList('postgresql://db1,db2/x')).toMatchObject({ writable: false, url: 'postgresql://db1:5432/x' });
  });

  it('refuses session attributes it does not handle', () => {
    expect(() => parseHostList('postgres://db1,db2/x?target_session_attrs=standby')).toThrow(/target_session_attrs=standby is not supported/);
  });
});

describe('HostSelector', () => {
  const list = parseHostList('postgres://db1,db2/x?target_session_attrs=read-write')!;

  it('moves to the next host when a connection reaches a standby, once per failure', async () => {
    const selector = new HostSelector(list);
    const standby = { query: async () => ({ rows: [{ standby: true }] }) };
    await expect(selector.verify(standby)).rejects.toMatchObject({ code: 'ESTANDBY' });
    expect(selector.host).toEqual({ host: 'db2', port: 5432 });
    // A second failure reported for db1 (a connection opened before the move) does not move it back.
    selector.next(list.hosts[0]!);
    expect(selector.host).toEqual({ host: 'db2', port: 5432 });
    await expect(selector.verify({ query: async () => ({ rows: [{ standby: false }] }) })).resolves.toBeUndefined();
    expect(selector.host).toEqual({ host: 'db2', port: 5432 });
  });
});
