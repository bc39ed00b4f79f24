export { RampartClient } from './client.ts';
export type { ClientOptions, IpsPageQuery, Ipv4ListQuery, ReportOptions, ScoreListQuery } from './client.ts';
export { Transport, parseJson } from './http.ts';
export type { TransportOptions, RequestOptions, RawResponse, Query } from './http.ts';
export { ClientApiError, InsufficientCoinsError, RateLimitedError, NetworkError, ResponseShapeError, isRetryable } from './errors.ts';
export { backoffDelay, parseRetryAfter, sleep, DEFAULT_BACKOFF } from './backoff.ts';
export type { BackoffOptions } from './backoff.ts';
export { walkTs, walkPages, splitList, splitCsvLines } from './pagination.ts';
export type { CursorPage, TsPage } from './pagination.ts';
