import { randomUUID } from 'node:crypto';
import { decodeMulti, Encoder, type ExtensionCodecType } from '@msgpack/msgpack';

/*
 * The DXL message envelope, as the public OpenDXL clients (Python, Java, JavaScript) write it:
 * an MQTT payload holding MessagePack values one after the other, not one array:
 *
 *   version, messageType,
 *   messageId, sourceClientId, sourceBrokerId, brokerIds[], clientIds[], payload (bin),
 *   request:  replyToTopic, serviceId
 *   response: requestMessageId, serviceId
 *   error:    requestMessageId, serviceId, errorCode, errorMessage
 *   version >= 1: otherFields as a flat [key, value, key, value, ...] array
 *   version >= 2: sourceTenantGuid, destinationTenantGuids[]
 *
 * Messages are written as version 2; newer versions append fields, which reading ignores.
 * MessagePack itself is @msgpack/msgpack's: it picks the smallest encoding of each integer,
 * string, binary and array length, as the clients' packers do (the tests compare with msgpack5).
 */

/** Any frame that is not a DXL message: bad MessagePack, or a field of the wrong type. */
export class MalformedMessageError extends Error {
  readonly code = 'DXL_MALFORMED_MESSAGE';
  constructor(message: string) {
    super(message);
    this.name = 'MalformedMessageError';
  }
}

export type Packable = null | boolean | number | string | Uint8Array | readonly Packable[];

/** Values packed one after the other, as a DXL frame holds them. Byte arrays are `bin`, strings `str`. */
export function packAll(values: readonly Packable[]): Buffer {
  const encoder = new Encoder();
  return Buffer.concat(values.map((v) => encoder.encode(v)));
}

// DXL uses no extension types; the library's default would hand back ExtData (or a Date).
const noExtensions: ExtensionCodecType<undefined> = {
  tryToEncode: () => null,
  decode: (_data, type) => {
    throw new MalformedMessageError(`unsupported MessagePack extension type ${type}`);
  },
};

/** Reads a frame's values one at a time; every decoding failure becomes a MalformedMessageError. */
function valuesOf(frame: Buffer): () => unknown {
  const values = decodeMulti(frame, { extensionCodec: noExtensions });
  return () => {
    let next: IteratorResult<unknown>;
    try {
      next = values.next();
    } catch (err) {
      if (err instanceof MalformedMessageError) throw err;
      // The decoder throws RangeError when a value runs past the end, DecodeError on bad bytes.
      if (err instanceof RangeError) throw new MalformedMessageError('truncated MessagePack value');
      throw new MalformedMessageError(`invalid MessagePack: ${(err as Error).message}`);
    }
    if (next.done) throw new MalformedMessageError('truncated MessagePack value');
    return next.value;
  };
}

export const MESSAGE_VERSION = 2;

export const MessageType = { request: 0, response: 1, event: 2, error: 3 } as const;
export type MessageTypeName = keyof typeof MessageType;

interface Common {
  messageId: string;
  sourceClientId: string;
  sourceBrokerId: string;
  brokerIds: string[];
  clientIds: string[];
  payload: Buffer;
  otherFields: Record<string, string>;
  sourceTenantGuid: string;
  destinationTenantGuids: string[];
}

export type DxlMessage =
  | (Common & { type: 'request'; replyToTopic: string; serviceId: string })
  | (Common & { type: 'response'; requestMessageId: string; serviceId: string })
  | (Common & { type: 'error'; requestMessageId: string; serviceId: string; errorCode: number; errorMessage: string })
  | (Common & { type: 'event' });

/** A DXL message id: a UUID in braces, as the OpenDXL clients generate them. */
export function dxlId(): string {
  return `{${randomUUID()}}`;
}

const empty = (): Omit<Common, 'payload'> => ({
  messageId: dxlId(),
  sourceClientId: '',
  sourceBrokerId: '',
  brokerIds: [],
  clientIds: [],
  otherFields: {},
  sourceTenantGuid: '',
  destinationTenantGuids: [],
});

export function requestMessage(payload: Buffer, replyToTopic: string, fields: Partial<Common> = {}): DxlMessage {
  return { ...empty(), ...fields, payload, type: 'request', replyToTopic, serviceId: '' };
}

/** A response to `request`, addressed back to its sender as the OpenDXL service side does. */
export function responseTo(request: DxlMessage & { type: 'request' }, payload: Buffer): DxlMessage & { type: 'response' } {
  return {
    ...empty(),
    payload,
    type: 'response',
    requestMessageId: request.messageId,
    serviceId: request.serviceId,
    clientIds: request.sourceClientId ? [request.sourceClientId] : [],
    brokerIds: request.sourceBrokerId ? [request.sourceBrokerId] : [],
  };
}

export function errorTo(request: DxlMessage & { type: 'request' }, errorCode: number, errorMessage: string): DxlMessage {
  return { ...responseTo(request, Buffer.alloc(0)), type: 'error', errorCode, errorMessage };
}

export function encodeMessage(m: DxlMessage): Buffer {
  if (m.type === 'error' && !Number.isSafeInteger(m.errorCode)) throw new MalformedMessageError(`DXL field errorCode: ${m.errorCode} is not an integer`);
  const values: Packable[] = [MESSAGE_VERSION, MessageType[m.type], m.messageId, m.sourceClientId, m.sourceBrokerId, m.brokerIds, m.clientIds, m.payload];
  if (m.type === 'request') values.push(m.replyToTopic, m.serviceId);
  if (m.type === 'response' || m.type === 'error') values.push(m.requestMessageId, m.serviceId);
  if (m.type === 'error') values.push(m.errorCode, m.errorMessage);
  values.push(Object.entries(m.otherFields).flat());
  values.push(m.sourceTenantGuid, m.destinationTenantGuids);
  return packAll(values);
}

function text(v: unknown, field: string): string {
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  if (v === null) return '';
  throw new MalformedMessageError(`DXL field ${field}: expected text`);
}

function texts(v: unknown, field: string): string[] {
  if (v === null) return [];
  if (!Array.isArray(v)) throw new MalformedMessageError(`DXL field ${field}: expected an array`);
  return v.map((x) => text(x, field));
}

function int(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new MalformedMessageError(`DXL field ${field}: expected an integer`);
  return v;
}

/** Reads one DXL frame; throws `MalformedMessageError` (code DXL_MALFORMED_MESSAGE) on anything else. */
export function decodeMessage(frame: Buffer): DxlMessage {
  const read = valuesOf(frame);
  const version = int(read(), 'version');
  const typeCode = int(read(), 'messageType');
  const type = (Object.keys(MessageType) as MessageTypeName[]).find((k) => MessageType[k] === typeCode);
  if (!type) throw new MalformedMessageError(`unknown DXL message type ${typeCode}`);
  const messageId = text(read(), 'messageId');
  const sourceClientId = text(read(), 'sourceClientId');
  const sourceBrokerId = text(read(), 'sourceBrokerId');
  const brokerIds = texts(read(), 'brokerIds');
  const clientIds = texts(read(), 'clientIds');
  const raw = read();
  // A copy: the decoder's bin is a view into the frame.
  const payload = raw instanceof Uint8Array ? Buffer.from(raw) : Buffer.from(text(raw, 'payload'), 'utf8');
  const common: Common = { ...empty(), messageId, sourceClientId, sourceBrokerId, brokerIds, clientIds, payload };
  let m: DxlMessage;
  if (type === 'request') m = { ...common, type, replyToTopic: text(read(), 'replyToTopic'), serviceId: text(read(), 'serviceId') };
  else if (type === 'event') m = { ...common, type };
  else {
    const requestMessageId = text(read(), 'requestMessageId');
    const serviceId = text(read(), 'serviceId');
    m = type === 'response' ? { ...common, type, requestMessageId, serviceId } : { ...common, type, requestMessageId, serviceId, errorCode: int(read(), 'errorCode'), errorMessage: text(read(), 'errorMessage') };
  }
  if (version >= 1) {
    const flat = texts(read(), 'otherFields');
    for (let i = 0; i + 1 < flat.length; i += 2) m.otherFields[flat[i]!] = flat[i + 1]!;
  }
  if (version >= 2) {
    m.sourceTenantGuid = text(read(), 'sourceTenantGuid');
    m.destinationTenantGuids = texts(read(), 'destinationTenantGuids');
  }
  return m;
}
