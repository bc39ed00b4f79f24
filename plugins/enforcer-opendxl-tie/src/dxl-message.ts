import { randomUUID } from 'node:crypto';
import { MsgpackError, MsgpackReader, packAll, type Packable, type Unpacked } from './msgpack.ts';

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
 */

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
  const values: Packable[] = [MESSAGE_VERSION, MessageType[m.type], m.messageId, m.sourceClientId, m.sourceBrokerId, m.brokerIds, m.clientIds, m.payload];
  if (m.type === 'request') values.push(m.replyToTopic, m.serviceId);
  if (m.type === 'response' || m.type === 'error') values.push(m.requestMessageId, m.serviceId);
  if (m.type === 'error') values.push(m.errorCode, m.errorMessage);
  values.push(Object.entries(m.otherFields).flat());
  values.push(m.sourceTenantGuid, m.destinationTenantGuids);
  return packAll(values);
}

function text(v: Unpacked, field: string): string {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (v === null) return '';
  throw new MsgpackError(`DXL field ${field}: expected text`);
}

function texts(v: Unpacked, field: string): string[] {
  if (v === null) return [];
  if (!Array.isArray(v)) throw new MsgpackError(`DXL field ${field}: expected an array`);
  return v.map((x) => text(x, field));
}

function int(v: Unpacked, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new MsgpackError(`DXL field ${field}: expected an integer`);
  return v;
}

/** Reads one DXL frame; throws `MsgpackError` (code DXL_MALFORMED_MESSAGE) on anything else. */
export function decodeMessage(frame: Buffer): DxlMessage {
  const r = new MsgpackReader(frame);
  const version = int(r.read(), 'version');
  const typeCode = int(r.read(), 'messageType');
  const type = (Object.keys(MessageType) as MessageTypeName[]).find((k) => MessageType[k] === typeCode);
  if (!type) throw new MsgpackError(`unknown DXL message type ${typeCode}`);
  const messageId = text(r.read(), 'messageId');
  const sourceClientId = text(r.read(), 'sourceClientId');
  const sourceBrokerId = text(r.read(), 'sourceBrokerId');
  const brokerIds = texts(r.read(), 'brokerIds');
  const clientIds = texts(r.read(), 'clientIds');
  const raw = r.read();
  const payload = Buffer.isBuffer(raw) ? raw : Buffer.from(text(raw, 'payload'), 'utf8');
  const common: Common = { ...empty(), messageId, sourceClientId, sourceBrokerId, brokerIds, clientIds, payload };
  let m: DxlMessage;
  if (type === 'request') m = { ...common, type, replyToTopic: text(r.read(), 'replyToTopic'), serviceId: text(r.read(), 'serviceId') };
  else if (type === 'event') m = { ...common, type };
  else {
    const requestMessageId = text(r.read(), 'requestMessageId');
    const serviceId = text(r.read(), 'serviceId');
    m = type === 'response' ? { ...common, type, requestMessageId, serviceId } : { ...common, type, requestMessageId, serviceId, errorCode: int(r.read(), 'errorCode'), errorMessage: text(r.read(), 'errorMessage') };
  }
  if (version >= 1) {
    const flat = texts(r.read(), 'otherFields');
    for (let i = 0; i + 1 < flat.length; i += 2) m.otherFields[flat[i]!] = flat[i + 1]!;
  }
  if (version >= 2) {
    m.sourceTenantGuid = text(r.read(), 'sourceTenantGuid');
    m.destinationTenantGuids = texts(r.read(), 'destinationTenantGuids');
  }
  return m;
}
