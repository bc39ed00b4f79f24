// The definition alone (schema, lazy create) is `@rampart/enforcer-opendxl-tie/definition`,
// what the agent's registry imports; the DXL client and TIE adapter load with the enforcer.
export * from './definition.ts';
export { DxlClient, DxlError, parseBrokerAddress, type DxlConnection } from './dxl-client.ts';
export { decodeMessage, encodeMessage, errorTo, MalformedMessageError, packAll, requestMessage, responseTo, MessageType, type DxlMessage } from './dxl-message.ts';
export { digestOf, hashTypeOf, tieHash, TieFiles, TrustLevel, ENTERPRISE_PROVIDER, TIE_GET_FILE_REPUTATION, TIE_SET_FILE_REPUTATION, type TieHash } from './tie.ts';
export { createTieEnforcer, eachLimited, parseDigestList, renderDigestList, tieAdapter, type ReputationService } from './tie-adapter.ts';
