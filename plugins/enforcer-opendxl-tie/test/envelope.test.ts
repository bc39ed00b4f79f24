import { describe, expect, it } from 'vitest';
import { decodeMessage, digestOf, eachLimited, encodeMessage, errorTo, hashTypeOf, MsgpackReader, pack, packAll, parseBrokerAddress, requestMessage, responseTo, tieHash, type DxlMessage } from '../src/index.ts';
import { decodeReference, dxl, type RefMessage } from './reference-dxl.ts';

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

  it('refuses what is not a DXL frame with a typed error', () => {
    const malformed = (frame: Buffer) => {
      try {
        decodeMessage(frame);
      } catch (err) {
        return `${(err as { code?: string }).code}: ${(err as Error).message}`;
      }
      return 'decoded';
    };
    expect(malformed(Buffer.from([0x02, 0x09]))).toBe('DXL_MALFORMED_MESSAGE: unknown DXL message type 9');
    expect(malformed(Buffer.from([0x02]))).toBe('DXL_MALFORMED_MESSAGE: truncated MessagePack value');
    expect(malformed(packAll([2, 1, 7]))).toBe('DXL_MALFORMED_MESSAGE: DXL field messageId: expected text');
    expect(malformed(packAll([2, 1, 'id', '', '', 'x']))).toBe('DXL_MALFORMED_MESSAGE: DXL field brokerIds: expected an array');
    expect(malformed(packAll(['2']))).toBe('DXL_MALFORMED_MESSAGE: DXL field version: expected an integer');
    expect(malformed(Buffer.from([0xd4, 0x01, 0x00]))).toBe('DXL_MALFORMED_MESSAGE: unsupported MessagePack type 0xd4');
  });
});

describe('MessagePack', () => {
  it('round-trips every size class it writes', () => {
    const values = [0, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER, -1, -32, -33, -(2 ** 40), null, true, false, '', 'x'.repeat(31), 'x'.repeat(32), 'é'.repeat(200), 'x'.repeat(70_000)];
    for (const v of values) expect(new MsgpackReader(pack(v)).read()).toEqual(v);
    const bins = [0, 255, 256, 70_000].map((n) => Buffer.alloc(n, 7));
    for (const b of bins) expect(new MsgpackReader(pack(b)).read()).toEqual(b);
    const arrays = [[], Array.from({ length: 15 }, (_, i) => i), Array.from({ length: 16 }, (_, i) => `${i}`), Array.from({ length: 70_000 }, () => 1)];
    for (const a of arrays) expect(JSON.stringify(new MsgpackReader(pack(a)).read())).toBe(JSON.stringify(a));
    expect(() => pack(1.5)).toThrow('cannot pack 1.5: only safe integers');
  });

  it('reads maps, floats and signed integers another packer wrote', () => {
    const r = new MsgpackReader(Buffer.from('82a16101a162c0cb3ff8000000000000ca3fc00000d0ffd1ff00d2ffff0000d3ffffffffffffffffde0001a178dc0001c3df00000000dd00000000c5000161c600000001620000', 'hex'));
    expect(r.read()).toEqual(new Map<unknown, unknown>([['a', 1], ['b', null]]));
    expect([r.read(), r.read(), r.read(), r.read(), r.read(), r.read()]).toEqual([1.5, 1.5, -1, -256, -65_536, -1]);
    expect(r.read()).toEqual(new Map([['x', [true]]]));
    expect(r.read()).toEqual(new Map());
    expect(r.read()).toEqual([]);
    expect(r.read()).toEqual(Buffer.from('a'));
    expect(r.read()).toEqual(Buffer.from('b'));
    expect(r.done).toBe(false);
    expect([r.read(), r.read()]).toEqual([0, 0]);
    expect(r.done).toBe(true);
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
