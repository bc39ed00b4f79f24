import { z } from 'zod';
import {
  AgentConfig,
  AgentFeedbackBody,
  AgentRegisterResponse,
  AgentSettingsDocument,
  AgentTokenIssued,
  AgentTokenInfo,
  DecisionListResponse,
  IndicatorListResponse,
  WhyResponse,
  OverviewHistoryResponse,
  ApiKeyInfo,
  AuditListResponse,
  OperatorOrganization,
  OperatorOrgListResponse,
  OperatorUser,
  type AuditQuery,
  type OperatorOrgListQuery,
  type DecisionListQuery,
  type IndicatorListQuery,
  DomainPage,
  FilePage,
  IpsReportBody,
  Ipv4Page,
  OrganizationConfig,
  UrlPage,
  VersionRecord,
} from '@rampart/contracts';
import { Transport, parseJson, type RequestOptions, type TransportOptions } from './http.ts';
import { splitCsvLines, splitList, walkPages, walkTs, type CursorPage } from './pagination.ts';

export type ClientOptions = TransportOptions;

export interface IpsPageQuery {
  ts?: number;
  page_size?: number;
  full?: 'yes' | 'no';
}

export interface Ipv4ListQuery {
  format?: 'CSV' | 'LIST';
  agid?: string;
  plugin?: string;
  page?: string;
}

export interface ScoreListQuery {
  /** `/domains/score`: the domain list is written as `protocol://domain` (required there). */
  protocol?: 'HTTP' | 'HTTPS';
  /** `/files/score`: which digest of each file is listed (required there). */
  digest?: 'MD5' | 'SHA1' | 'SHA256';
  page?: string;
}

export interface ReportOptions {
  /** Sent as `?gaid=` like the original agent. */
  gaid?: string;
  /** Sent as `Idempotency-Key`, so a server that honours it ignores a replayed report. */
  idempotencyKey?: string;
  retries?: number;
  signal?: AbortSignal;
}

type Call = Pick<RequestOptions, 'retries' | 'signal'>;

/** Typed client of the Rampart API; every JSON answer is parsed with its contract. */
export class RampartClient {
  readonly transport: Transport;

  constructor(options: ClientOptions) {
    this.transport = new Transport(options);
  }

  get baseUrl(): string {
    return this.transport.options.baseUrl;
  }

  /** The WebSocket address of the live sync channel. */
  syncUrl(): string {
    return this.transport.url('/agents/sync').replace(/^http/, 'ws');
  }

  authHeaders(): Record<string, string> {
    return this.transport.authHeaders();
  }

  async version(call: Call = {}): Promise<VersionRecord> {
    return parseJson(VersionRecord, await this.transport.request('GET', '/version', call));
  }

  async ipsPage(query: IpsPageQuery = {}, call: Call = {}): Promise<Ipv4Page> {
    return parseJson(Ipv4Page, await this.transport.request('GET', '/ips', { ...call, query: { ...query } }));
  }

  /** Every IPv4 feed page after `ts`; the generator's return value is the final cursor. */
  ipsFeed(ts: number, query: Omit<IpsPageQuery, 'ts'> = {}, call: Call = {}) {
    return walkTs((cursor) => this.ipsPage({ ...query, ts: cursor }, call), ts);
  }

  async ipLookup(ip: string, query: { full?: 'yes' | 'no'; explain?: 'yes' | 'no' } = {}, call: Call = {}): Promise<Ipv4Page> {
    return parseJson(Ipv4Page, await this.transport.request('GET', `/ips/${encodeURIComponent(ip)}`, { ...call, query: { ...query } }));
  }

  async reportIp(body: IpsReportBody | z.input<typeof IpsReportBody>, options: ReportOptions = {}): Promise<void> {
    const headers: Record<string, string> = {};
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    const call: RequestOptions = { body, headers, query: { gaid: options.gaid } };
    if (options.retries !== undefined) call.retries = options.retries;
    if (options.signal) call.signal = options.signal;
    await this.transport.request('POST', '/ips', call);
  }

  /** One page of `/ipv4/{min_score}`: addresses (or networks) and the `next_page` cursor. */
  async ipv4ListPage(minScore: number, query: Ipv4ListQuery = {}, call: Call = {}): Promise<CursorPage<string>> {
    const raw = await this.transport.request('GET', `/ipv4/${minScore}`, { ...call, query: { ...query } });
    return { items: splitList(raw.text), nextPage: raw.headers.get('next_page') ?? undefined };
  }

  ipv4List(minScore: number, query: Omit<Ipv4ListQuery, 'page'> = {}, call: Call = {}) {
    return walkPages((page) => this.ipv4ListPage(minScore, page === undefined ? query : { ...query, page }, call));
  }

  /**
   * One page of a named kind's score list (`/domains/score/{m}` with `protocol`, `/urls/score/{m}`,
   * `/files/score/{m}` with `digest`): what the caller's organization should block now.
   */
  async scoreListPage(kind: 'domain' | 'url' | 'file', minScore: number, query: ScoreListQuery = {}, call: Call = {}): Promise<CursorPage<string>> {
    // One entry per line (CSV): a URL may hold commas, which the server then quotes.
    const raw = await this.transport.request('GET', `/${kind}s/score/${minScore}`, { ...call, query: { ...query, format: 'CSV' } });
    return { items: splitCsvLines(raw.text), nextPage: raw.headers.get('next_page') ?? undefined };
  }

  scoreList(kind: 'domain' | 'url' | 'file', minScore: number, query: Omit<ScoreListQuery, 'page'> = {}, call: Call = {}) {
    return walkPages((page) => this.scoreListPage(kind, minScore, page === undefined ? query : { ...query, page }, call));
  }

  async filesPage(query: { ts: number; page_size?: number; min_score?: number; tags?: string }, call: Call = {}): Promise<FilePage> {
    return parseJson(FilePage, await this.transport.request('GET', '/files', { ...call, query }));
  }

  filesFeed(ts: number, call: Call = {}) {
    return walkTs((cursor) => this.filesPage({ ts: cursor }, call), ts);
  }

  async domainsPage(query: { ts: number; page_size?: number }, call: Call = {}): Promise<DomainPage> {
    return parseJson(DomainPage, await this.transport.request('GET', '/domains', { ...call, query }));
  }

  domainsFeed(ts: number, call: Call = {}) {
    return walkTs((cursor) => this.domainsPage({ ts: cursor }, call), ts);
  }

  async urlsPage(query: { ts: number; page_size?: number }, call: Call = {}): Promise<UrlPage> {
    return parseJson(UrlPage, await this.transport.request('GET', '/urls', { ...call, query }));
  }

  urlsFeed(ts: number, call: Call = {}) {
    return walkTs((cursor) => this.urlsPage({ ts: cursor }, call), ts);
  }

  async registerAgent(config: AgentConfig | z.input<typeof AgentConfig>, call: Call = {}): Promise<AgentRegisterResponse> {
    return parseJson(AgentRegisterResponse, await this.transport.request('POST', '/agents', { ...call, body: config }));
  }

  /** Issues an agent key (admin key required); the token is shown only in this answer. */
  async issueAgentToken(agid: string, body: { ttl_days?: number } = {}, call: Call = {}): Promise<AgentTokenIssued> {
    return parseJson(AgentTokenIssued, await this.transport.request('POST', `/agents/${encodeURIComponent(agid)}/token`, { ...call, body }));
  }

  /** An agent's keys (ids, issue and expiry times, revoked or not); admin key required. */
  async agentTokens(agid: string, call: Call = {}): Promise<AgentTokenInfo[]> {
    return parseJson(z.array(AgentTokenInfo), await this.transport.request('GET', `/agents/${encodeURIComponent(agid)}/tokens`, call));
  }

  /** Revokes one agent key by its id (jti); the agent's live connection is closed. */
  async revokeAgentToken(agid: string, tokenId: string, call: Call = {}): Promise<void> {
    await this.transport.request('DELETE', `/agents/${encodeURIComponent(agid)}/tokens/${encodeURIComponent(tokenId)}`, call);
  }

  async agentFeedback(body: AgentFeedbackBody, call: Call = {}): Promise<void> {
    await this.transport.request('POST', '/agents/feedback', { ...call, body });
  }

  /** The agent settings document (secrets come back masked unless the caller is the agent itself). */
  async agentSettings(agid: string, call: Call = {}): Promise<AgentSettingsDocument> {
    return parseJson(AgentSettingsDocument, await this.transport.request('GET', `/agents/${encodeURIComponent(agid)}/config`, call));
  }

  async organizationConfig(call: Call = {}): Promise<OrganizationConfig> {
    return parseJson(OrganizationConfig, await this.transport.request('GET', '/organization/config', call));
  }

  /** One page of the organization's decisions (`GET /decisions`); pass `next_page` as `page` with the same filters. */
  async decisionsPage(query: Partial<DecisionListQuery> = {}, call: Call = {}): Promise<DecisionListResponse> {
    return parseJson(DecisionListResponse, await this.transport.request('GET', '/decisions', { ...call, query: { ...query } }));
  }

  /** Every decision matching the filters, page after page. */
  async *decisions(query: Omit<Partial<DecisionListQuery>, 'page'> = {}, call: Call = {}): AsyncGenerator<DecisionListResponse['items'][number]> {
    yield* this.walkBrowse((page) => this.decisionsPage({ ...query, ...(page ? { page } : {}) }, call));
  }

  /** One page of the indicators the organization sees (`GET /indicators`). */
  async indicatorsPage(query: Partial<IndicatorListQuery> = {}, call: Call = {}): Promise<IndicatorListResponse> {
    return parseJson(IndicatorListResponse, await this.transport.request('GET', '/indicators', { ...call, query: { ...query } }));
  }

  /** Every indicator matching the filters, page after page. */
  async *indicators(query: Omit<Partial<IndicatorListQuery>, 'page'> = {}, call: Call = {}): AsyncGenerator<IndicatorListResponse['items'][number]> {
    yield* this.walkBrowse((page) => this.indicatorsPage({ ...query, ...(page ? { page } : {}) }, call));
  }

  /** Why an indicator is (or is not) blocked for the caller's organization now (`GET /why`, priced as a look-up). */
  async why(kind: 'ipv4' | 'domain' | 'url' | 'file', value: string, call: Call = {}): Promise<WhyResponse> {
    return parseJson(WhyResponse, await this.transport.request('GET', '/why', { ...call, query: { kind, value } }));
  }

  /** The organization's figures over time, from stored rollups (`GET /overview/history`, free). */
  async overviewHistory(days?: number, call: Call = {}): Promise<OverviewHistoryResponse> {
    return parseJson(OverviewHistoryResponse, await this.transport.request('GET', '/overview/history', { ...call, query: days === undefined ? {} : { days } }));
  }

  /** Operators: one page of the alliance's organizations. */
  async operatorOrganizations(query: Partial<OperatorOrgListQuery> = {}, call: Call = {}): Promise<OperatorOrgListResponse> {
    return parseJson(OperatorOrgListResponse, await this.transport.request('GET', '/operator/organizations', { ...call, query: { ...query } }));
  }

  /** Operators: a new organization (audited). */
  async createOrganization(body: { name: string; trust?: number; delay?: number; credits?: number }, call: Call = {}): Promise<OperatorOrganization> {
    return parseJson(OperatorOrganization, await this.transport.request('POST', '/operator/organizations', { ...call, body, retries: 0 }));
  }

  /** Operators: set trust and/or delay (audited). */
  async updateOrganization(gid: string, body: { trust?: number; delay?: number }, call: Call = {}): Promise<OperatorOrganization> {
    return parseJson(OperatorOrganization, await this.transport.request('PATCH', `/operator/organizations/${encodeURIComponent(gid)}`, { ...call, body }));
  }

  /** Operators: grant coins (audited; not retried, so a lost answer never grants twice). */
  async grantCoins(gid: string, body: { amount: number; note?: string }, call: Call = {}): Promise<OperatorOrganization> {
    return parseJson(OperatorOrganization, await this.transport.request('POST', `/operator/organizations/${encodeURIComponent(gid)}/coins`, { ...call, body, retries: 0 }));
  }

  async organizationUsers(gid: string, call: Call = {}): Promise<OperatorUser[]> {
    return parseJson(z.array(OperatorUser), await this.transport.request('GET', `/operator/organizations/${encodeURIComponent(gid)}/users`, call));
  }

  async organizationKeys(gid: string, call: Call = {}): Promise<ApiKeyInfo[]> {
    return parseJson(z.array(ApiKeyInfo), await this.transport.request('GET', `/operator/organizations/${encodeURIComponent(gid)}/keys`, call));
  }

  /** One page of the audit log (admins: their organization; operators: all). */
  async auditPage(query: Partial<AuditQuery> = {}, call: Call = {}): Promise<AuditListResponse> {
    return parseJson(AuditListResponse, await this.transport.request('GET', '/audit', { ...call, query: { ...query } }));
  }

  private async *walkBrowse<T>(fetchPage: (page: string | undefined) => Promise<{ items: T[]; next_page: string | null }>): AsyncGenerator<T> {
    for await (const page of walkPages(async (cursor) => {
      const res = await fetchPage(cursor);
      return { items: res.items, nextPage: res.next_page ?? undefined };
    })) {
      yield* page.items;
    }
  }
}
