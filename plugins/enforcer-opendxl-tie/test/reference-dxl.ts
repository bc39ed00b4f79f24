import { createRequire } from 'node:module';

/*
 * The official OpenDXL JavaScript client (@opendxl/dxl-client, a dev dependency), typed for what
 * the tests use. The stand-in TIE service speaks DXL through it, so that the enforcer's own
 * envelope code is checked against the reference implementation, not against itself.
 */

export interface RefMessage {
  messageId: string;
  sourceClientId: string;
  sourceBrokerId: string;
  brokerIds: string[];
  clientIds: string[];
  payload: Buffer | string;
  otherFields: Record<string, string>;
  sourceTenantGuid: string;
  destinationTenantGuids: string[];
  destinationTopic: string;
  version: number;
  messageType: number;
  _toBytes(): Buffer;
}
export interface RefRequest extends RefMessage {
  replyToTopic: string;
  serviceId: string;
}
export interface RefResponse extends RefMessage {
  requestMessageId: string;
  serviceId: string;
  errorCode?: number;
  errorMessage?: string;
}
export interface RefClient {
  connect(callback?: () => void): void;
  addRequestCallback(topic: string, callback: (request: RefRequest) => void): void;
  sendResponse(response: RefResponse): void;
  destroy(callback?: () => void): void;
  on(event: 'error', listener: (err: Error) => void): void;
}

interface DxlModule {
  Config: new (ca: string, cert: string, key: string, brokers: unknown[]) => object;
  Broker: { parse(url: string): unknown };
  Client: new (config: object) => RefClient;
  Request: new (topic: string) => RefRequest;
  Response: new (request: RefRequest) => RefResponse;
  ErrorResponse: new (request: RefRequest, code: number, message: string) => RefResponse;
}

const require = createRequire(import.meta.url);

/*
 * The client reads frames with msgpack5 from a BufferList and checks `instanceof BufferList`;
 * npm installs its `bl` and msgpack5's `bl` as two copies, so that check fails and every frame
 * it receives fails to decode ("unable to decode"), its own frames too. Both copies are bl 1.x:
 * the client is given msgpack5's copy, as a flat install would have shared one.
 */
function shareBufferList(): void {
  const clientRequire = createRequire(require.resolve('@opendxl/dxl-client'));
  const msgpackRequire = createRequire(clientRequire.resolve('msgpack5'));
  const clientBl = clientRequire.resolve('bl');
  const msgpackBl = msgpackRequire.resolve('bl');
  if (clientBl === msgpackBl) return;
  msgpackRequire('bl');
  require.cache[clientBl] = require.cache[msgpackBl];
}
shareBufferList();
export const dxl = require('@opendxl/dxl-client') as DxlModule;
/** The client's own MessagePack packer (msgpack5), to compare encodings with. */
export const referencePacker = createRequire(require.resolve('@opendxl/dxl-client'))('msgpack5')() as { encode(value: unknown): { slice(): Buffer } };
export const decodeReference = require('@opendxl/dxl-client/lib/decode-message.js') as (raw: Buffer) => RefMessage;
