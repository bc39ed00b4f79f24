import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, waitFor } from '@rampart/plugin-kit/testing';

const exec = promisify(execFile);

/** PEM files of a test PKI: the broker's CA, the broker, two clients it trusts, one it does not. */
export interface TestPki {
  dir: string;
  caFile: string;
  server: { cert: string; key: string };
  /** The agent's certificate (key file path and PEM text). */
  agent: { cert: string; key: string; keyPem: string };
  /** The stand-in TIE service's certificate. */
  service: { cert: string; key: string };
  /** Signed by another CA: the broker must refuse it. */
  stranger: { cert: string; key: string };
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await exec('openssl', args, { cwd });
}

async function keyAndCert(dir: string, name: string, subject: string, ca: { cert: string; key: string } | undefined, ext = ''): Promise<{ cert: string; key: string }> {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.pem`);
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key], dir);
  if (!ca) {
    await openssl(['req', '-x509', '-new', '-key', key, '-subj', subject, '-days', '2', '-out', cert, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
    return { cert, key };
  }
  const csr = join(dir, `${name}.csr`);
  await openssl(['req', '-new', '-key', key, '-subj', subject, '-out', csr], dir);
  const extFile = join(dir, `${name}.ext`);
  await writeFile(extFile, `basicConstraints=CA:FALSE\n${ext}`);
  await openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-days', '2', '-out', cert, '-extfile', extFile], dir);
  return { cert, key };
}

/** A fresh PKI made with `openssl` (EC P-256 keys, valid two days). */
export async function makePki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), 'rampart-dxl-pki-'));
  const ca = await keyAndCert(dir, 'ca', '/CN=Rampart test DXL CA', undefined);
  const server = await keyAndCert(dir, 'broker', '/CN=localhost', ca, 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  const agent = await keyAndCert(dir, 'agent', '/CN=rampart-agent', ca, 'extendedKeyUsage=clientAuth\n');
  const service = await keyAndCert(dir, 'tie', '/CN=tie-stand-in', ca, 'extendedKeyUsage=clientAuth\n');
  const otherCa = await keyAndCert(dir, 'other-ca', '/CN=Someone else', undefined);
  const stranger = await keyAndCert(dir, 'stranger', '/CN=stranger', otherCa, 'extendedKeyUsage=clientAuth\n');
  return { dir, caFile: ca.cert, server, agent: { ...agent, keyPem: await readFile(agent.key, 'utf8') }, service, stranger };
}

export interface Broker {
  port: number;
  log(): string;
  stop(): Promise<void>;
}

/**
 * A private mosquitto on 127.0.0.1 that speaks only TLS and requires a client certificate
 * signed by the test CA (`require_certificate`), the way a DXL broker admits clients.
 */
export async function startBroker(pki: TestPki): Promise<Broker> {
  const port = await freePort();
  const conf = join(pki.dir, 'mosquitto.conf');
  await writeFile(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      `cafile ${pki.caFile}`,
      `certfile ${pki.server.cert}`,
      `keyfile ${pki.server.key}`,
      'require_certificate true',
      'use_identity_as_username true',
      'allow_anonymous false',
      'persistence false',
      // Run as root, mosquitto drops to the user 'mosquitto', which cannot read the test's 0700 directory.
      ...(process.getuid?.() === 0 ? ['user root'] : []),
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      'log_type notice',
      '',
    ].join('\n'),
  );
  const child = spawn('mosquitto', ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  let running = true;
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000);
  });
  child.on('exit', () => {
    running = false;
  });
  try {
    await waitFor(async () => {
      if (!running) throw new Error(`mosquitto exited: ${stderr.trim()}`);
      return new Promise<boolean>((resolve) => {
        const socket = tcpConnect(port, '127.0.0.1');
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      });
    }, 'mosquitto to listen');
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    port,
    log: () => stderr,
    async stop() {
      if (!running) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export async function removePki(pki: TestPki | undefined): Promise<void> {
  if (pki) await rm(pki.dir, { recursive: true, force: true });
}
