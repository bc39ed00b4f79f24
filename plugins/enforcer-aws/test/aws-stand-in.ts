import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/*
 * Test stand-in for the few AWS actions the enforcer calls, so that the real SDK clients sign
 * and serialize against it: EC2 (query protocol, XML) DescribeNetworkAcls, Create-, Replace- and
 * DeleteNetworkAclEntry with the 20-rule quota; WAFv2 (JSON 1.1) ListIPSets, CreateIPSet,
 * GetIPSet and UpdateIPSet with lock tokens and the 10,000-address limit.
 */

export interface AclEntry {
  ruleNumber: number;
  protocol: string;
  ruleAction: string;
  egress: boolean;
  cidrBlock: string;
}
export interface IpSet {
  id: string;
  name: string;
  scope: string;
  lockToken: string;
  addresses: string[];
}
export interface AwsState {
  acls: Map<string, AclEntry[]>;
  ipSets: Map<string, IpSet>;
  /** `service action` per request, with the access key id the signature named. */
  calls: { service: string; action: string; accessKeyId: string; at: number }[];
  /** After the next GetIPSet of this set, a concurrent writer changes it (its token goes stale). */
  bumpLockAfterGet?: string;
  /** UpdateIPSet calls refused for a stale lock token. */
  staleWrites: number;
}

export interface AwsStandIn {
  endpoint: string;
  state: AwsState;
  /** Deny CIDRs of an ACL's ingress entries, sorted by rule number. */
  denies(aclId: string): string[];
  /** All addresses of the IP sets whose name starts with `prefix`. */
  ipSetAddresses(prefix: string): string[];
  stop(): Promise<void>;
}

const ACL_QUOTA = 20;
const IP_SET_LIMIT = 10_000;
const EC2_NS = 'http://ec2.amazonaws.com/doc/2016-11-15/';
const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export async function startAwsStandIn(opts: { accessKeyId: string; region: string; aclIds: string[] }): Promise<AwsStandIn> {
  const state: AwsState = { acls: new Map(opts.aclIds.map((id) => [id, []])), ipSets: new Map(), calls: [], staleWrites: 0 };

  function ec2Error(res: ServerResponse, status: number, code: string, message: string) {
    res.writeHead(status, { 'content-type': 'text/xml' }).end(
      `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error></Errors><RequestID>${randomUUID()}</RequestID></Response>`,
    );
  }
  function ec2Ok(res: ServerResponse, action: string, inner: string) {
    res.writeHead(200, { 'content-type': 'text/xml' }).end(
      `<?xml version="1.0" encoding="UTF-8"?><${action}Response xmlns="${EC2_NS}"><requestId>${randomUUID()}</requestId>${inner}</${action}Response>`,
    );
  }

  function ec2(p: URLSearchParams, res: ServerResponse) {
    const action = p.get('Action') ?? '';
    if (action === 'DescribeNetworkAcls') {
      const ids = [...p.entries()].filter(([k]) => /^NetworkAclId\.\d+$/.test(k)).map(([, v]) => v);
      const missing = ids.find((id) => !state.acls.has(id));
      if (missing) return ec2Error(res, 400, 'InvalidNetworkAclID.NotFound', `The network ACL ID '${missing}' does not exist`);
      const items = ids
        .map((id) => {
          const entries = [...state.acls.get(id)!, { ruleNumber: 32767, protocol: '-1', ruleAction: 'deny', egress: false, cidrBlock: '0.0.0.0/0' }]
            .map(
              (e) =>
                `<item><cidrBlock>${e.cidrBlock}</cidrBlock><egress>${e.egress}</egress><protocol>${e.protocol}</protocol><ruleAction>${e.ruleAction}</ruleAction><ruleNumber>${e.ruleNumber}</ruleNumber></item>`,
            )
            .join('');
          return `<item><networkAclId>${id}</networkAclId><vpcId>vpc-0a1b2c3d</vpcId><default>false</default><entrySet>${entries}</entrySet><associationSet/><tagSet/></item>`;
        })
        .join('');
      return ec2Ok(res, action, `<networkAclSet>${items}</networkAclSet>`);
    }
    const aclId = p.get('NetworkAclId') ?? '';
    const entries = state.acls.get(aclId);
    if (!entries) return ec2Error(res, 400, 'InvalidNetworkAclID.NotFound', `The network ACL ID '${aclId}' does not exist`);
    const ruleNumber = Number(p.get('RuleNumber'));
    const egress = p.get('Egress') === 'true';
    const at = entries.findIndex((e) => e.ruleNumber === ruleNumber && e.egress === egress);
    const entry = () => ({ ruleNumber, egress, protocol: p.get('Protocol') ?? '', ruleAction: p.get('RuleAction') ?? '', cidrBlock: p.get('CidrBlock') ?? '' });
    if (action === 'CreateNetworkAclEntry') {
      if (at >= 0) return ec2Error(res, 400, 'NetworkAclEntryAlreadyExists', `The network acl entry identified by ${ruleNumber} already exists.`);
      if (entries.filter((e) => e.egress === egress).length >= ACL_QUOTA) return ec2Error(res, 400, 'NetworkAclEntryLimitExceeded', 'The maximum number of network ACL entries has been reached.');
      entries.push(entry());
      return ec2Ok(res, action, '<return>true</return>');
    }
    if (action === 'ReplaceNetworkAclEntry') {
      if (at < 0) return ec2Error(res, 400, 'InvalidNetworkAclEntry.NotFound', `The network ACL entry ${ruleNumber} does not exist`);
      entries[at] = entry();
      return ec2Ok(res, action, '<return>true</return>');
    }
    if (action === 'DeleteNetworkAclEntry') {
      if (at < 0) return ec2Error(res, 400, 'InvalidNetworkAclEntry.NotFound', `The network ACL entry ${ruleNumber} does not exist`);
      entries.splice(at, 1);
      return ec2Ok(res, action, '<return>true</return>');
    }
    return ec2Error(res, 400, 'InvalidAction', `The action ${action} is not valid for this web service.`);
  }

  function wafError(res: ServerResponse, type: string, message: string) {
    res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-errortype': type }).end(JSON.stringify({ __type: type, Message: message }));
  }
  const wafOk = (res: ServerResponse, body: unknown) => res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(body));

  function waf(op: string, input: Record<string, unknown>, res: ServerResponse) {
    const sets = [...state.ipSets.values()].filter((s) => s.scope === input.Scope);
    if (op === 'ListIPSets') {
      const start = Number(input.NextMarker ?? 0);
      const limit = Number(input.Limit ?? 100);
      const page = sets.slice(start, start + limit);
      return wafOk(res, {
        IPSets: page.map((s) => ({ Name: s.name, Id: s.id, LockToken: s.lockToken, ARN: `arn:aws:wafv2:${opts.region}:123456789012:regional/ipset/${s.name}/${s.id}` })),
        ...(start + limit < sets.length ? { NextMarker: String(start + limit) } : {}),
      });
    }
    if (op === 'CreateIPSet') {
      if (sets.some((s) => s.name === input.Name)) return wafError(res, 'WAFDuplicateItemException', 'AWS WAF could not perform the operation because some resource in your request is a duplicate of an existing one.');
      const set = { id: randomUUID(), name: String(input.Name), scope: String(input.Scope), lockToken: randomUUID(), addresses: (input.Addresses as string[]) ?? [] };
      state.ipSets.set(set.id, set);
      return wafOk(res, { Summary: { Name: set.name, Id: set.id, LockToken: set.lockToken, ARN: `arn:aws:wafv2:::ipset/${set.id}` } });
    }
    const set = state.ipSets.get(String(input.Id));
    if (!set || set.name !== input.Name || set.scope !== input.Scope) return wafError(res, 'WAFNonexistentItemException', 'AWS WAF couldn’t perform the operation because your resource doesn’t exist.');
    if (op === 'GetIPSet') {
      const token = set.lockToken;
      if (state.bumpLockAfterGet === set.name) {
        state.bumpLockAfterGet = undefined;
        set.lockToken = randomUUID();
      }
      return wafOk(res, { IPSet: { Name: set.name, Id: set.id, ARN: '', IPAddressVersion: 'IPV4', Addresses: set.addresses }, LockToken: token });
    }
    if (op === 'UpdateIPSet') {
      if (input.LockToken !== set.lockToken) {
        state.staleWrites += 1;
        return wafError(res, 'WAFOptimisticLockException', 'AWS WAF couldn’t save your changes because someone changed the resource after you started to edit it.');
      }
      const addresses = (input.Addresses as string[]) ?? [];
      if (addresses.length > IP_SET_LIMIT) return wafError(res, 'WAFLimitsExceededException', 'AWS WAF couldn’t perform the operation because you exceeded your resource limit.');
      if (addresses.some((a) => !/^\d+\.\d+\.\d+\.\d+\/([1-9]|[12]\d|3[0-2])$/.test(a))) return wafError(res, 'WAFInvalidParameterException', 'Addresses: invalid CIDR');
      set.addresses = addresses;
      set.lockToken = randomUUID();
      return wafOk(res, { NextLockToken: set.lockToken });
    }
    return wafError(res, 'UnknownOperationException', op);
  }

  const server = createServer(async (req: IncomingMessage, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    // The SDK signs with SigV4: the scope names the key, the region and the service.
    const scope = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/.exec(
      String(req.headers.authorization ?? ''),
    );
    const target = String(req.headers['x-amz-target'] ?? '');
    const service = target ? 'wafv2' : 'ec2';
    if (!scope || scope[1] !== opts.accessKeyId || scope[3] !== service) {
      if (service === 'ec2') return ec2Error(res, 401, 'AuthFailure', 'AWS was not able to validate the provided access credentials');
      return wafError(res, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
    }
    if (service === 'ec2') {
      const p = new URLSearchParams(body);
      state.calls.push({ service, action: p.get('Action') ?? '', accessKeyId: scope[1]!, at: Date.now() });
      return ec2(p, res);
    }
    const op = target.replace(/^AWSWAF_20190729\./, '');
    state.calls.push({ service, action: op, accessKeyId: scope[1]!, at: Date.now() });
    return waf(op, JSON.parse(body || '{}') as Record<string, unknown>, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    denies(aclId) {
      return [...(state.acls.get(aclId) ?? [])].filter((e) => !e.egress && e.ruleAction === 'deny').sort((a, b) => a.ruleNumber - b.ruleNumber).map((e) => e.cidrBlock);
    },
    ipSetAddresses(prefix) {
      return [...state.ipSets.values()].filter((s) => s.name.startsWith(`${prefix}-`)).flatMap((s) => s.addresses).sort();
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
