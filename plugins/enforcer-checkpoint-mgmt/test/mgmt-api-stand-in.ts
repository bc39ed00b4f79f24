import { execFileSync } from 'node:child_process';
import { randomUUID, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * A stand-in of the Check Point Management Web API (R8x reference), enough for the enforcer:
 * login/logout/keepalive sessions, private changes per session that lock the objects they
 * touch until publish or discard, hosts, networks and groups, paged show-hosts/show-networks,
 * publish and install-policy as tasks whose progress is polled through show-task, and errors
 * as the API returns them (HTTP 4xx, JSON `{ code, message }`). A test, not a product.
 */

export interface ApiObject {
  uid: string;
  name: string;
  type: 'host' | 'network' | 'group';
  'ipv4-address'?: string;
  subnet4?: string;
  'mask-length4'?: number;
  members?: string[];
}

interface Session {
  sid: string;
  user: string;
  readOnly: boolean;
  domain: string;
  /** The session's private copy of the database, made at its first change. */
  draft?: Map<string, ApiObject>;
  touched: Set<string>;
}

interface Task {
  id: string;
  name: string;
  pollsLeft: number;
  outcome: string;
  message: string;
  onSuccess?: () => void;
}

export interface Call {
  command: string;
  sid?: string;
  body: Record<string, unknown>;
}

export interface StandInState {
  objects: Map<string, ApiObject>;
  sessions: Map<string, Session>;
  tasks: Map<string, Task>;
  calls: Call[];
  installs: { policy: string; targets: string[]; members: string[] }[];
  /** show-task polls before a publish / an install ends (Infinity: never). */
  publishPolls: number;
  installPolls: number;
  /** How the next install ends, and with what message. */
  installOutcome: 'succeeded' | 'failed' | 'partially succeeded';
  installMessage: string;
  /** Runs before each command is answered (to expire sessions at a chosen moment). */
  onCall?: (call: Call) => void;
}

export interface MgmtApiStandIn {
  port: number;
  /** `AA:BB:…`, as Node's `fingerprint256`. */
  fingerprint256: string;
  certPath: string;
  state: StandInState;
  /** Members of a published group, names sorted. */
  groupMembers(name: string): string[];
  /** What the published group holds, as CIDRs sorted by text. */
  enforced(group?: string): string[];
  count(command: string): number;
  /** Ends every session the way the session timeout does: the sid is refused, changes dropped. */
  expireSessions(): void;
  stop(): Promise<void>;
}

export interface StandInOptions {
  user: string;
  password: string;
  /** A Multi-Domain Server: login needs one of these domains. */
  domains?: string[];
  group?: string;
  policies?: string[];
  gateways?: string[];
}

class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message));
  }
}

const fail = (status: number, code: string, message: string, extra: Record<string, unknown> = {}) => new ApiFailure(status, { code, message, ...extra });
const notFound = (name: string) => fail(404, 'generic_err_object_not_found', `Requested object [${name}] not found`);
const invalid = (message: string) => fail(400, 'err_validation_failed', 'Validation failed with 1 error', { errors: [{ message }] });

function certificate(dir: string): { key: string; cert: string; certPath: string } {
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=mgmt.test',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ], { stdio: 'ignore' });
  return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8'), certPath };
}

export async function startMgmtApiStandIn(o: StandInOptions): Promise<MgmtApiStandIn> {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-cpmgmt-'));
  const { key, cert, certPath } = certificate(dir);
  const policies = new Set(o.policies ?? ['Standard']);
  const gateways = new Set(o.gateways ?? ['gw1', 'gw2']);
  const state: StandInState = {
    objects: new Map(),
    sessions: new Map(),
    tasks: new Map(),
    calls: [],
    installs: [],
    publishPolls: 1,
    installPolls: 2,
    installOutcome: 'succeeded',
    installMessage: '',
  };
  const group = o.group ?? 'rampart-blocked';
  state.objects.set(group, { uid: randomUUID(), name: group, type: 'group', members: [] });

  const view = (s: Session) => s.draft ?? state.objects;

  /** Marks `name` changed by `s`; refused while another session holds a change to it. */
  function touch(s: Session, name: string): Map<string, ApiObject> {
    if (s.readOnly) throw fail(403, 'generic_err_command_not_allowed', 'Command is not allowed in a read-only session');
    for (const other of state.sessions.values()) {
      if (other !== s && other.touched.has(name)) throw fail(409, 'err_object_locked', `Object ${name} is locked by ${other.user} in another session`);
    }
    s.draft ??= new Map([...state.objects].map(([k, v]) => [k, structuredClone(v)]));
    s.touched.add(name);
    return s.draft;
  }

  function need(body: Record<string, unknown>, ...keys: string[]) {
    const missing = keys.filter((k) => body[k] === undefined || body[k] === '');
    if (missing.length) throw fail(400, 'generic_err_missing_required_parameters', `Missing parameter: [${missing.join(', ')}]`);
  }

  function get(s: Session, name: unknown, type?: ApiObject['type']): ApiObject {
    const found = view(s).get(String(name));
    if (!found || (type && found.type !== type)) throw notFound(String(name));
    return found;
  }

  function addObject(s: Session, body: Record<string, unknown>, made: Omit<ApiObject, 'uid' | 'name'>): ApiObject {
    const name = String(body.name);
    if (view(s).has(name)) throw invalid(`More than one object named "${name}" exists.`);
    const address = made['ipv4-address'] ?? made.subnet4;
    const same = [...view(s).values()].find((x) => x.type === made.type && (x['ipv4-address'] ?? x.subnet4) === address && x['mask-length4'] === made['mask-length4']);
    if (same && body['ignore-warnings'] !== true) {
      throw fail(400, 'err_validation_failed', 'Validation failed with 1 warning', { warnings: [{ message: `Multiple objects have the same IP address ${address}` }] });
    }
    const obj: ApiObject = { uid: randomUUID(), name, ...made };
    touch(s, name).set(name, obj);
    return obj;
  }

  function deleteObject(s: Session, body: Record<string, unknown>, type: ApiObject['type']) {
    need(body, 'name');
    const obj = get(s, body.name, type);
    const user = [...view(s).values()].find((g) => g.members?.includes(obj.name));
    if (user) throw invalid(`Object ${obj.name} is used by group ${user.name}`);
    touch(s, obj.name).delete(obj.name);
    return { message: 'OK' };
  }

  function shown(s: Session, obj: ApiObject, details: unknown): unknown {
    if (details === 'uid') return obj.uid;
    if (obj.type !== 'group') return obj;
    return { ...obj, members: (obj.members ?? []).map((m) => get(s, m)) };
  }

  function page(s: Session, body: Record<string, unknown>, type: ApiObject['type']) {
    const limit = body.limit === undefined ? 50 : Number(body.limit);
    const offset = Number(body.offset ?? 0);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw fail(400, 'generic_err_invalid_parameter', 'Invalid parameter for [limit]. The value must be between 1 and 500');
    const filter = typeof body.filter === 'string' ? body.filter : '';
    const all = [...view(s).values()]
      .filter((x) => x.type === type && (!filter || x.name.includes(filter) || (x['ipv4-address'] ?? x.subnet4 ?? '').includes(filter)))
      .sort((a, b) => a.name.localeCompare(b.name));
    const objects = all.slice(offset, offset + limit);
    return { from: offset + 1, to: offset + objects.length, total: all.length, objects };
  }

  function startTask(name: string, polls: number, outcome: string, message: string, onSuccess?: () => void) {
    const id = randomUUID();
    state.tasks.set(id, { id, name, pollsLeft: polls, outcome, message, ...(onSuccess ? { onSuccess } : {}) });
    return { 'task-id': id };
  }

  function publish(s: Session) {
    const changes = s.touched.size;
    const draft = s.draft;
    const touched = [...s.touched];
    s.draft = undefined;
    s.touched = new Set();
    // The changes become visible when the task succeeds; the session is free again at once.
    return startTask('Publish operation', state.publishPolls, 'succeeded', `${changes} changes published`, () => {
      for (const name of touched) {
        const obj = draft?.get(name);
        if (obj) state.objects.set(name, obj);
        else state.objects.delete(name);
      }
    });
  }

  function install(body: Record<string, unknown>) {
    need(body, 'policy-package', 'targets');
    const policy = String(body['policy-package']);
    if (!policies.has(policy)) throw notFound(policy);
    const targets = (Array.isArray(body.targets) ? body.targets : [body.targets]).map(String);
    for (const t of targets) if (!gateways.has(t)) throw notFound(t);
    const members = [...(state.objects.get(group)?.members ?? [])].sort();
    return startTask(`Installing policy ${policy}`, state.installPolls, state.installOutcome, state.installMessage, () => {
      state.installs.push({ policy, targets, members });
    });
  }

  function showTask(body: Record<string, unknown>) {
    need(body, 'task-id');
    const task = state.tasks.get(String(body['task-id']));
    if (!task) throw notFound(String(body['task-id']));
    task.pollsLeft -= 1;
    if (task.pollsLeft > 0) return { tasks: [{ 'task-id': task.id, 'task-name': task.name, status: 'in progress', 'progress-percentage': 50 }] };
    if (task.outcome === 'succeeded') task.onSuccess?.();
    const details = task.outcome === 'succeeded' ? [] : [{ stagesInfo: [{ messages: [{ type: 'err', message: task.message }] }] }];
    return { tasks: [{ 'task-id': task.id, 'task-name': task.name, status: task.outcome, 'progress-percentage': 100, 'task-details': details }] };
  }

  function login(body: Record<string, unknown>) {
    need(body, 'user', 'password');
    if (body.user !== o.user || body.password !== o.password) throw fail(400, 'err_login_failed', 'Authentication to server failed.');
    const domain = typeof body.domain === 'string' ? body.domain : '';
    if (o.domains && !o.domains.includes(domain)) throw fail(400, 'err_login_failed', `Login to domain [${domain}] failed`);
    const sid = randomUUID().replaceAll('-', '');
    state.sessions.set(sid, { sid, user: o.user, readOnly: body['read-only'] === true, domain, touched: new Set() });
    return { sid, uid: randomUUID(), url: `https://127.0.0.1/web_api`, 'session-timeout': 600, 'api-server-version': '1.8' };
  }

  function dispatch(command: string, sid: string | undefined, body: Record<string, unknown>): unknown {
    if (command === 'login') return login(body);
    const s = sid ? state.sessions.get(sid) : undefined;
    if (!s) throw fail(400, 'generic_err_wrong_session_id', `Wrong session id [${sid ?? ''}]. Session may be expired. Please check session id and resend the request`);
    switch (command) {
      case 'logout':
        state.sessions.delete(s.sid);
        return { message: 'OK' };
      case 'keepalive':
        return { message: 'OK' };
      case 'discard': {
        const n = s.touched.size;
        s.draft = undefined;
        s.touched = new Set();
        return { 'number-of-discarded-changes': n, message: 'OK' };
      }
      case 'publish':
        return publish(s);
      case 'install-policy':
        return install(body);
      case 'show-task':
        return showTask(body);
      case 'show-group':
        need(body, 'name');
        return shown(s, get(s, body.name, 'group'), body['details-level']);
      case 'show-hosts':
        return page(s, body, 'host');
      case 'show-networks':
        return page(s, body, 'network');
      case 'add-host':
        need(body, 'name', 'ip-address');
        return addObject(s, body, { type: 'host', 'ipv4-address': String(body['ip-address']) });
      case 'add-network':
        need(body, 'name', 'subnet', 'mask-length');
        return addObject(s, body, { type: 'network', subnet4: String(body.subnet), 'mask-length4': Number(body['mask-length']) });
      case 'add-group':
        need(body, 'name');
        return addObject(s, body, { type: 'group', members: [] });
      case 'delete-host':
        return deleteObject(s, body, 'host');
      case 'delete-network':
        return deleteObject(s, body, 'network');
      case 'set-group': {
        need(body, 'name', 'members');
        const g = get(s, body.name, 'group');
        const ops = body.members as { add?: string[]; remove?: string[] };
        for (const name of ops.add ?? []) get(s, name);
        for (const name of ops.remove ?? []) if (!g.members!.includes(name)) throw invalid(`Object ${name} is not a member of group ${g.name}`);
        const changed = touch(s, g.name).get(g.name)!;
        const next = new Set(changed.members);
        for (const name of ops.add ?? []) next.add(name);
        for (const name of ops.remove ?? []) next.delete(name);
        changed.members = [...next];
        return shown(s, changed, 'standard');
      }
      default:
        throw fail(404, 'generic_err_command_not_found', `Unknown command [${command}]`);
    }
  }

  const server: Server = createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const command = (req.url ?? '').replace(/^\/web_api\//, '');
      const sid = req.headers['x-chkp-sid'] as string | undefined;
      let status = 200;
      let reply: unknown;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
        const call = { command, ...(sid ? { sid } : {}), body };
        state.calls.push(call);
        state.onCall?.(call);
        if (req.method !== 'POST') throw fail(405, 'generic_error', 'Only POST is supported');
        reply = dispatch(command, sid, body);
      } catch (err) {
        if (!(err instanceof ApiFailure)) throw err;
        status = err.status;
        reply = err.body;
      }
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const members = (name: string) => [...(state.objects.get(name)?.members ?? [])].sort();
  return {
    port: (server.address() as AddressInfo).port,
    fingerprint256: new X509Certificate(cert).fingerprint256,
    certPath,
    state,
    groupMembers: members,
    enforced: (name = group) =>
      members(name)
        .map((m) => state.objects.get(m)!)
        .map((x) => (x.type === 'host' ? `${x['ipv4-address']}/32` : `${x.subnet4}/${x['mask-length4']}`))
        .sort(),
    count: (command) => state.calls.filter((c) => c.command === command).length,
    expireSessions: () => state.sessions.clear(),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
