import { describe, expect, it } from 'vitest';
import { execChunks, parseConnections, SshSession } from './ssh.ts';
import { startSshStandIn } from './testing/ssh-stand-in.ts';

describe('parseConnections', () => {
  it('reads hosts, host:port and [v6]:port, comma-separated with spaces', () => {
    expect(parseConnections(' 10.0.0.3, gw-b.example:2222 ,[2001:db8::1]:22,,')).toEqual([
      { host: '10.0.0.3' },
      { host: 'gw-b.example', port: 2222 },
      { host: '2001:db8::1', port: 22 },
    ]);
    expect(parseConnections('')).toEqual([]);
  });

  it('names the entry it cannot read', () => {
    expect(() => parseConnections('10.0.0.3, gw:99999')).toThrow("not a host or host:port: 'gw:99999'");
    expect(() => parseConnections('a b')).toThrow("'a b'");
  });
});

describe('execChunks', () => {
  it('cuts by line count and by bytes, and sends a single long line alone', () => {
    expect(execChunks(['a', 'b', 'c'], 2)).toEqual(['a\nb', 'c']);
    expect(execChunks(['aaaa', 'bbbb', 'cccc'], 10, 10)).toEqual(['aaaa\nbbbb', 'cccc']);
    expect(execChunks(['x'.repeat(20), 'y'], 10, 10)).toEqual(['x'.repeat(20), 'y']);
    expect(execChunks([], 5)).toEqual([]);
    const lines = Array.from({ length: 1000 }, (_, i) => `/ip firewall address-list add list=rampart-a address=198.18.${i >> 8}.${i & 255} comment="rampart"`);
    const chunks = execChunks(lines, 500);
    expect(chunks.every((c) => Buffer.byteLength(c) <= 32_000)).toBe(true);
    expect(chunks.join('\n')).toBe(lines.join('\n'));
  });
});

describe('SshSession.interact', () => {
  // A CLI that echoes, answers `show x` with two lines, never answers `hang`, hangs up on `quit`.
  function device() {
    return startSshStandIn({
      user: 'u',
      password: 'p',
      shell(io) {
        io.write('banner\r\nR1#');
        return (line) => {
          if (line === 'hang') return io.write(`${line}\r\n`);
          if (line === 'quit') return io.end();
          const out = line === 'show x' ? 'one\r\ntwo\r\n' : line === 'bad' ? '% Invalid input detected\r\n' : '';
          io.write(`${line}\r\n${out}${line === 'configure terminal' ? 'R1(config)#' : 'R1#'}`);
        };
      },
    });
  }

  it('returns each line’s output without echo or prompt; an error line fails the call; a silent device times out; an abort rejects', async () => {
    const d = await device();
    const s = new SshSession({ host: '127.0.0.1', port: d.port, username: 'u', password: 'p', hostKeySha256: d.hostKeySha256, timeoutMs: 1000 });
    try {
      expect(await s.interact(['show x', 'configure terminal', 'end'])).toEqual([
        { command: 'show x', output: 'one\ntwo\n' },
        { command: 'configure terminal', output: '' },
        { command: 'end', output: '' },
      ]);
      expect(d.received.slice(0, 2)).toEqual(['terminal length 0', 'show x']);
      await expect(s.interact(['bad', 'show x'], { errorLine: /^%/, setup: [] })).rejects.toMatchObject({
        code: 'CLI_COMMAND_FAILED',
        command: 'bad',
        detail: '% Invalid input detected',
      });
      expect(d.received.at(-1)).toBe('bad');
      await expect(s.interact(['hang'], { setup: [] })).rejects.toThrow("ssh shell: no prompt within 1000 ms after 'hang'");
      await expect(s.interact(['quit'], { setup: [] })).rejects.toThrow("ssh shell: the device closed the session after 'quit'");
      const controller = new AbortController();
      const pending = s.interact(['hang'], { setup: [] }, controller.signal);
      controller.abort(new Error('stop'));
      await expect(pending).rejects.toThrow('stop');
      await expect(s.interact(['show x'], {}, controller.signal)).rejects.toThrow('stop');
    } finally {
      await s.close();
      await d.stop();
    }
  });
});
