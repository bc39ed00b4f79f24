import { describe, expect, it } from 'vitest';
import { API_BASE, ApiError, ERROR_CATALOG, ERROR_CODES, ID_PREFIX, PROBLEM_BASE, Problem, ROLE, ROLE_DESCRIPTIONS, SVC, problemType } from './index.ts';

describe('error catalog', () => {
  it('maps codes to statuses', () => {
    const statuses = Object.fromEntries(ERROR_CODES.map((code) => [code, ERROR_CATALOG[code].status]));
    expect(statuses).toEqual({
      validation_failed: 400,
      bad_request: 400,
      non_public_address: 400,
      network_too_wide: 400,
      unauthorized: 401,
      insufficient_coins: 402,
      forbidden: 403,
      reserved_ip: 403,
      not_found: 404,
      route_not_found: 404,
      method_not_allowed: 405,
      not_acceptable: 406,
      request_timeout: 408,
      conflict: 409,
      payload_too_large: 413,
      unsupported_media_type: 415,
      rate_limited: 429,
      headers_too_large: 431,
      internal: 500,
      bad_gateway: 502,
      store_unavailable: 503,
      upstream_timeout: 504,
    });
  });

  it('builds problem type URIs', () => {
    expect(PROBLEM_BASE).toBe('https://rampart.dev/problems/');
    expect(problemType('not_found')).toBe('https://rampart.dev/problems/not_found');
  });
});

describe('ApiError', () => {
  it('takes status and title from the catalog', () => {
    const error = new ApiError('conflict', 'gaid RMP-AGENT-ID-1 is already registered');
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: 'ApiError', code: 'conflict', status: 409, detail: 'gaid RMP-AGENT-ID-1 is already registered' });
    expect(error.message).toBe(error.detail);
    expect(error.errors).toBeUndefined();
    expect(error.extra).toBeUndefined();
  });

  it('defaults detail to the title and keeps errors and extra', () => {
    const error = new ApiError('insufficient_coins', undefined, { extra: { balance: 3, price: 5 } });
    expect(error.detail).toBe('Not enough service coins');
    expect(error.extra).toEqual({ balance: 3, price: 5 });
    const invalid = new ApiError('validation_failed', 'body.ip: invalid', { errors: [{ path: 'body.ip', message: 'invalid' }] });
    expect(invalid.status).toBe(400);
    expect(invalid.errors).toEqual([{ path: 'body.ip', message: 'invalid' }]);
  });
});

describe('Problem', () => {
  const problem = {
    type: problemType('validation_failed'),
    title: 'Validation failed',
    status: 400,
    detail: 'body.confidence: too big',
    instance: '/api/v1/ips',
    errors: [{ path: 'body.confidence', message: 'too big' }],
  };

  it('parses a validation problem and keeps extension members', () => {
    expect(Problem.parse(problem)).toEqual(problem);
    const coins = { ...problem, type: problemType('insufficient_coins'), status: 402, errors: undefined, balance: 3, price: 5 };
    expect(Problem.parse(coins)).toMatchObject({ balance: 3, price: 5 });
  });

  it('rejects non-error statuses and missing members', () => {
    expect(Problem.safeParse({ ...problem, status: 200 }).success).toBe(false);
    const { detail: _d, ...noDetail } = problem;
    expect(Problem.safeParse(noDetail).success).toBe(false);
  });
});

describe('constants', () => {
  it('names and prefixes', () => {
    expect(SVC).toBe('RMP');
    expect(API_BASE).toBe('/api/v1');
    expect(ID_PREFIX).toEqual({ user: 'RMP-GUID-', org: 'RMP-GID-', rule: 'RMP-RULE-GID-', vpn: 'RMP-VID-LIC', agent: 'RMP-AGENT-ID-' });
    expect(ROLE).toEqual({ reader: 1, contributor: 2, admin: 3, operator: 9 });
    expect(Object.keys(ROLE_DESCRIPTIONS).map(Number).sort()).toEqual([1, 2, 3, 9]);
  });
});
