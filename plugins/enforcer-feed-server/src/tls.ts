import { X509Certificate } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic, type PluginLogger } from '@rampart/plugin-kit';
import { selfSignedCertificate } from './self-signed.ts';

export interface ServerCertificate {
  cert: string;
  key: string;
  source: 'configured' | 'self-signed';
  cert_file: string;
  /** As devices and `openssl x509 -fingerprint -sha256` show it, to pin. */
  sha256_fingerprint: string;
  not_after: string;
}

export interface CertificateOptions {
  certFile: string;
  keyFile: string;
  stateDir: string;
  /** subjectAltName entries of a generated certificate. */
  names: readonly string[];
  days: number;
  log: PluginLogger;
}

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function describe(cert: string, key: string, source: ServerCertificate['source'], certFile: string): ServerCertificate {
  const x509 = new X509Certificate(cert);
  return { cert, key, source, cert_file: certFile, sha256_fingerprint: x509.fingerprint256, not_after: new Date(x509.validTo).toISOString() };
}

/**
 * The configured certificate and key, else the self-signed pair kept in `<state_dir>/tls/`,
 * generated on the first start and reused after, so a device that pinned it keeps trusting it.
 */
export async function serverCertificate(o: CertificateOptions): Promise<ServerCertificate> {
  if (o.certFile) return describe(await readFile(o.certFile, 'utf8'), await readFile(o.keyFile, 'utf8'), 'configured', o.certFile);
  const dir = join(o.stateDir, 'tls');
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  const [cert, key] = await Promise.all([readIfPresent(certFile), readIfPresent(keyFile)]);
  if (cert !== undefined && key !== undefined) return describe(cert, key, 'self-signed', certFile);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const made = selfSignedCertificate(o.names, o.days);
  // The key first: a certificate on disk always has its key beside it.
  await writeFileAtomic(keyFile, made.keyPem, 0o600);
  await writeFileAtomic(certFile, made.certPem, 0o644);
  const out = describe(made.certPem, made.keyPem, 'self-signed', certFile);
  o.log.info({ cert_file: certFile, sha256_fingerprint: out.sha256_fingerprint, names: o.names }, 'generated a self-signed feed certificate; import it on the devices');
  return out;
}
