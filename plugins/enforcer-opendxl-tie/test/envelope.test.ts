import { describe, expect, it } from 'vitest';
import { decodeMessage, digestOf, eachLimited, encodeMessage, errorTo, hashTypeOf, packAll, parseBrokerAddress, requestMessage, responseTo, tieHash, type DxlMessage } from '../src/index.ts';
import { decodeReference, dxl, referencePacker, type RefMessage } from './reference-dxl.ts';

/*
 * The DXL envelope against the official OpenDXL JavaScript client: the frames this plugin writes
 * are byte for byte the ones the client writes for the same fields, and each side reads the other's.
 */

const fields = { messageId: '{00000000-0000-0000-0000-000000000001}', sourceClientId: '{agent}', sourceBrokerId: '{broker-1}', brokerIds: ['{b1}', '{b2}'], clientIds: ['{c1}'] };

function reference<T extends RefMessage>(m: T, extra: Partial<RefMessage> = {}): T {
  Object.assign(m, fields, { otherFields: { trace: 'on', k: 'v' }, sourceTenantGuid: '{tenant}', destinationTenantGuids: ['{t1}'] }, extra);
  return m;
}

function ours(m: DxlMessage): DxlMessage {
  return Object.assign(m, fields, { otherFields: { trace: 'on', k: 'v' }, sourceTenantGuid: '{tenant}', destinationTenantGuids: ['{t1}'] });
}

describe('DXL envelope', () => {
  const payload = Buffer.from('{"hashes":[{"type":"md5","value":"1B2M2Y8AsgTpgAmY7PhCfg=="}]}');

  it('a request is byte for byte the reference client\'s, and each side reads the other\'s', () => {
    const ref = reference(new dxl.Request('/mcafee/service/tie/file/reputation'), { payload });
    ref.replyToTopic = '/mcafee/client/{agent}';
    const mine = ours(requestMessage(payload, '/mcafee/client/{agent}'));
    expect(encodeMessage(mine).toString('hex')).toBe(ref._toBytes().toString('hex'));
    const back = decodeReference(encodeMessage(mine)) as RefMessage & { replyToTopic: string };
    expect({ type: back.messageType, id: back.messageId, reply: back.replyToTopic, payload: Buffer.from(back.payload).toString(), other: back.otherFields, tenant: back.sourceTenantGuid }).toEqual({
      type: 0,
      id: fields.messageId,
      reply: '/mcafee/client/{agent}',
      payload: payload.toString(),
      other: { trace: 'on', k: 'v' },
      tenant: '{tenant}',
    });
    expect(decodeMessage(ref._toBytes())).toEqual(mine);
  });

  it('a response and an error response are the reference client\'s', () => {
    const request = decodeMessage(encodeMessage(requestMessage(payload, '/reply', { sourceClientId: '{agent}', sourceBrokerId: '{broker-1}' })));
    if (request.type !== 'request') throw new Error('not a request');
    const refRequest = decodeReference(encodeMessage(request)) as RefMessage & { replyToTopic: string; serviceId: string };
    const refResponse = new dxl.Response(refRequest);
    refResponse.messageId = fields.messageId;
    refResponse.payload = Buffer.from('{}');
    const mine = { ...responseTo(request, Buffer.from('{}')), messageId: fields.messageId };
    expect(encodeMessage(mine).toString('hex')).toBe(refResponse._toBytes().toString('hex'));
    expect(decodeMessage(refResponse._toBytes())).toEqual(mine);

    const refError = new dxl.ErrorResponse(refRequest, 0x80000001, 'unable to locate service');
    refError.messageId = fields.messageId;
    // The reference's default payload is '' (packed as str); this plugin packs payloads as bin.
    refError.payload = Buffer.alloc(0);
    const myError = { ...errorTo(request, 0x80000001, 'unable to locate service'), messageId: fields.messageId };
    expect(encodeMessage(myError).toString('hex')).toBe(refError._toBytes().toString('hex'));
    expect(decodeMessage(refError._toBytes())).toMatchObject({ type: 'error', errorCode: 0x80000001, errorMessage: 'unable to locate service', requestMessageId: request.messageId });
  });

  it('reads older envelope versions and a payload packed as str; ignores fields of newer versions', () => {
    for (const version of [0, 1]) {
      const ref = reference(new dxl.Request('/t'), { payload, version });
      ref.replyToTopic = '/r';
      const m = decodeMessage(ref._toBytes());
      expect(m).toMatchObject({ type: 'request', replyToTopic: '/r', messageId: fields.messageId, otherFields: version === 1 ? { trace: 'on', k: 'v' } : {}, sourceTenantGuid: '' });
      expect(m.payload.toString()).toBe(payload.toString());
    }
    const asStr = packAll([3, 2, 'id', '', '', [], [], '{"a":1}', [], '', [], 'a field of version 3']);
    const event = decodeMessage(asStr);
    expect(event).toMatchObject({ type: 'event', messageId: 'id' });
    expect(event.payload.toString()).toBe('{"a":1}');
  });

  it('refuses what is not a DXL frame with a typed error, never anything else', () => {
    const malformed = (frame: Buffer) => {
      try {
        decodeMessage(frame);
      } catch (err) {
        return `${(err as { code?: string }).code}: ${(err as Error).message}`;
      }
      return 'decoded';
    };
    const head = (hex: string) => Buffer.concat([packAll([2, 1]), Buffer.from(hex, 'hex')]);
    expect(malformed(Buffer.from([0x02, 0x09]))).toBe('DXL_MALFORMED_MESSAGE: unknown DXL message type 9');
    expect(malformed(Buffer.from([0x02]))).toBe('DXL_MALFORMED_MESSAGE: truncated MessagePack value');
    expect(malformed(head('a56964'))).toBe('DXL_MALFORMED_MESSAGE: truncated MessagePack value');
    expect(malformed(head('dd00000002c0'))).toBe('DXL_MALFORMED_MESSAGE: truncated MessagePack value');
    expect(malformed(packAll([2, 1, 7]))).toBe('DXL_MALFORMED_MESSAGE: DXL field messageId: expected text');
    expect(malformed(head('81a16101'))).toBe('DXL_MALFORMED_MESSAGE: DXL field messageId: expected text');
    expect(malformed(packAll([2, 1, 'id', '', '', 'x']))).toBe('DXL_MALFORMED_MESSAGE: DXL field brokerIds: expected an array');
    expect(malformed(packAll(['2']))).toBe('DXL_MALFORMED_MESSAGE: DXL field version: expected an integer');
    expect(malformed(Buffer.from('cb3ff8000000000000', 'hex'))).toBe('DXL_MALFORMED_MESSAGE: DXL field version: expected an integer');
    expect(malformed(Buffer.from([0xd4, 0x01, 0x00]))).toBe('DXL_MALFORMED_MESSAGE: unsupported MessagePack extension type 1');
    expect(malformed(head('d6ff00000000'))).toBe('DXL_MALFORMED_MESSAGE: unsupported MessagePack extension type -1');
    expect(malformed(head('c1'))).toBe('DXL_MALFORMED_MESSAGE: invalid MessagePack: Unrecognized type byte: 0xc1');
    expect(malformed(head('819001'))).toBe('DXL_MALFORMED_MESSAGE: invalid MessagePack: The type of key must be string or number but object');
    expect(malformed(head('81a95f5f70726f746f5f5f01'))).toBe('DXL_MALFORMED_MESSAGE: invalid MessagePack: The key __proto__ is not allowed');
  });

  it('refuses to write an error code that is not an integer', () => {
    const request = requestMessage(payload, '/reply');
    if (request.type !== 'request') throw new Error('not a request');
    expect(() => encodeMessage(errorTo(request, 1.5, 'x'))).toThrow('DXL field errorCode: 1.5 is not an integer');
  });
});

describe('MessagePack in DXL frames', () => {
  it('writes every size class as the reference client\'s packer (msgpack5) does; bytes as bin, text as str', () => {
    const values = [0, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER, 0x80000001, -1, -32, -33, -128, -129, -32_768, -32_769, -214_748_364, -(2 ** 31) - 1, -(2 ** 40)];
    const texts = ['', 'x'.repeat(31), 'x'.repeat(32), 'x'.repeat(255), 'x'.repeat(256), 'é'.repeat(200), 'x'.repeat(70_000)];
    const bins = [0, 255, 256, 70_000].map((n) => Buffer.alloc(n, 7));
    const arrays = [[], Array.from({ length: 15 }, (_, i) => i), Array.from({ length: 16 }, (_, i) => `${i}`), Array.from({ length: 70_000 }, () => 1)];
    for (const v of [...values, null, true, false, ...texts, ...bins, ...arrays]) {
      expect(packAll([v]).toString('hex')).toBe(referencePacker.encode(v).slice().toString('hex'));
    }
    expect(packAll(['ab', Buffer.from('ab'), new Uint8Array([0x61, 0x62])]).toString('hex')).toBe('a26162c4026162c4026162');
    // msgpack5 3.6 writes int 64 from -214,748,365 down (its int 32 bound lacks a digit); this
    // packer, like the Java and Python ones, writes int 32 down to -2**31. Every reader takes
    // either, and the frames this plugin writes hold no negative integer.
    expect([packAll([-214_748_365]).toString('hex'), referencePacker.encode(-214_748_365).slice().toString('hex')]).toEqual(['d2f3333333', 'd3fffffffff3333333']);
    expect(packAll([-(2 ** 31)]).toString('hex')).toBe('d280000000');
  });

  it('reads every integer width, and text and bytes in every size class, another packer may write', () => {
    const frame = (id: string, payload: string, code: string) =>
      Buffer.concat([packAll([2, 3]), Buffer.from(id, 'hex'), packAll(['', '', [], []]), Buffer.from(payload, 'hex'), packAll(['req', '']), Buffer.from(code, 'hex'), packAll(['m', [], '', []])]);
    const codes: [string, number][] = [
      ['05', 5], ['cc05', 5], ['cd0005', 5], ['ce00000005', 5], ['cf0000000000000005', 5],
      ['e0', -32], ['d0df', -33], ['d1ffdf', -33], ['d2ffffffdf', -33], ['d3ffffffffffffffdf', -33], ['cb4014000000000000', 5],
    ];
    for (const [hex, code] of codes) expect(decodeMessage(frame('a26964', 'c40161', hex))).toMatchObject({ type: 'error', messageId: 'id', errorCode: code });
    for (const id of ['a26964', 'd9026964', 'da00026964', 'db000000026964', 'c4026964', 'c500026964', 'c6000000026964']) {
      for (const payload of ['c40161', 'c5000161', 'c60000000161', 'a161', 'd90161', 'da000161', 'db0000000161']) {
        const m = decodeMessage(frame(id, payload, '00'));
        expect([m.messageId, m.payload.toString('hex')]).toEqual(['id', '61']);
      }
    }
  });
});

describe('TIE hashes and helpers', () => {
  it('sends each digest with its type and the raw digest in base64, and reads it back canonical', () => {
    expect(tieHash('D41D8CD98F00B204E9800998ECF8427E')).toEqual({ type: 'md5', value: '1B2M2Y8AsgTpgAmY7PhCfg==' });
    expect(tieHash('DA39A3EE5E6B4B0D3255BFEF95601890AFD80709')).toEqual({ type: 'sha1', value: '2jmj7l5rSw0yVb/vlWAYkK/YBwk=' });
    expect(tieHash('E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855')).toEqual({ type: 'sha256', value: '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=' });
    expect(digestOf({ type: 'md5', value: '1B2M2Y8AsgTpgAmY7PhCfg==' })).toBe('D41D8CD98F00B204E9800998ECF8427E');
    expect(() => hashTypeOf('ABC')).toThrow('not an MD5, SHA-1 or SHA-256 digest: ABC');
  });

  it('parses broker addresses the way DXL configurations write them', () => {
    expect(parseBrokerAddress('ssl://dxl.example.org:8883')).toEqual({ host: 'dxl.example.org', port: 8883 });
    expect(parseBrokerAddress('10.0.0.5')).toEqual({ host: '10.0.0.5', port: 8883 });
    expect(parseBrokerAddress('mqtts://[fd00::5]:9883')).toEqual({ host: 'fd00::5', port: 9883 });
    expect(parseBrokerAddress('b:70000')).toBeUndefined();
    expect(parseBrokerAddress('https://b/x')).toBeUndefined();
  });

  it('runs at most the given number of tasks at once and reports the first failure after the others settle', async () => {
    let running = 0;
    let peak = 0;
    const done: number[] = [];
    const task = async (n: number) => {
      running += 1;
      peak = Math.max(peak, running);
      await Promise.resolve();
      running -= 1;
      if (n === 3) throw new Error('task 3');
      done.push(n);
    };
    await eachLimited([1, 2, 4, 5, 6, 7], 2, task);
    expect([peak, done]).toEqual([2, [1, 2, 4, 5, 6, 7]]);
    done.length = 0;
    await expect(eachLimited([1, 2, 3, 4, 5, 6], 3, task)).rejects.toThrow('task 3');
    // Tasks already running when 3 failed settle (4 and 5); none starts after (6).
    expect(done).toEqual([1, 2, 4, 5]);
    await eachLimited([], 4, task);
  });
});
