import { createHash, generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

/*
 * A self-signed X.509 certificate made with node:crypto alone. Node can generate keys and sign,
 * but has no API that builds a certificate, so the few DER structures of RFC 5280 are written
 * here (about sixty lines) instead of adding a dependency: `selfsigned` pulls in node-forge, and
 * @peculiar/x509 half a dozen ASN.1 packages plus a DI container, for one certificate made once.
 * The result is checked by node's own X509Certificate parser and by curl (OpenSSL) in the tests.
 *
 * RSA-2048 with SHA-256: every device of this plugin (PAN-OS, FortiOS, Cisco FMC) accepts it,
 * which is not true of every ECDSA curve on older releases.
 */

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
};
const seq = (...items: Buffer[]) => tlv(0x30, ...items);
const set = (...items: Buffer[]) => tlv(0x31, ...items);
const octets = (b: Buffer) => tlv(0x04, b);
const bitString = (b: Buffer) => tlv(0x03, Buffer.from([0]), b);
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const explicit = (n: number, inner: Buffer) => tlv(0xa0 + n, inner);

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out = [40 * parts[0]! + parts[1]!];
  for (const part of parts.slice(2)) {
    const groups: number[] = [];
    for (let v = part; ; v = Math.floor(v / 128)) {
      groups.unshift(v % 128);
      if (v < 128) break;
    }
    out.push(...groups.map((g, i) => (i < groups.length - 1 ? g | 0x80 : g)));
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime up to 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  const [head, tail = ''] = ip.split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head!);
  const t = groups(tail);
  const all = ip.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return Buffer.concat(all.map((g) => Buffer.from(g.padStart(4, '0'), 'hex')));
}

const extension = (id: string, critical: boolean, value: Buffer) => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

export interface SelfSigned {
  certPem: string;
  keyPem: string;
}

/**
 * A certificate for `names` (DNS names and IP addresses, all in subjectAltName; the first is the
 * common name), valid from one hour ago for `days`. It is its own CA (basicConstraints CA:TRUE,
 * as `openssl req -x509` makes them), so a device can import it as the trust anchor it pins.
 */
export function selfSignedCertificate(names: readonly string[], days: number, now = new Date()): SelfSigned {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const sha256Rsa = seq(oid('1.2.840.113549.1.1.11'), tlv(0x05));
  const name = seq(set(seq(oid('2.5.4.3'), utf8(names[0] ?? 'rampart-feeds'))));
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f || 0x01;
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const keyId = createHash('sha1').update(subjectPublicKeyBits(publicKey)).digest();
  const san = seq(...names.map((n) => (isIP(n) ? tlv(0x87, ipBytes(n)) : tlv(0x82, Buffer.from(n, 'ascii')))));
  const extensions = seq(
    extension('2.5.29.19', true, seq(bool(true))),
    // digitalSignature, keyEncipherment, keyCertSign
    extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x02, 0xa4]))),
    extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))),
    extension('2.5.29.14', false, octets(keyId)),
    extension('2.5.29.17', false, san),
  );
  const notBefore = new Date(now.getTime() - 3_600_000);
  const notAfter = new Date(now.getTime() + days * 86_400_000);
  const tbs = seq(explicit(0, tlv(0x02, Buffer.from([2]))), tlv(0x02, serial), sha256Rsa, name, seq(time(notBefore), time(notAfter)), name, spki, explicit(3, extensions));
  const signature = sign('sha256', tbs, privateKey);
  const der = seq(tbs, sha256Rsa, bitString(signature));
  const certPem = `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n?$/, '\n')}-----END CERTIFICATE-----\n`;
  // Parsed back by node's own parser: a malformed structure fails here, not on a device.
  new X509Certificate(certPem);
  return { certPem, keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

/** The subjectPublicKey BIT STRING's contents (RFC 5280 §4.2.1.2 method 1 hashes these). */
function subjectPublicKeyBits(key: KeyObject): Buffer {
  const spki = key.export({ type: 'spki', format: 'der' });
  // SEQUENCE { AlgorithmIdentifier, BIT STRING }: skip the outer header and the algorithm.
  let i = 1 + headerLength(spki, 1);
  i += 1 + headerLength(spki, i + 1) + contentLength(spki, i + 1);
  const bitsStart = i + 1 + headerLength(spki, i + 1);
  return spki.subarray(bitsStart + 1, bitsStart + contentLength(spki, i + 1));
}

function headerLength(b: Buffer, at: number): number {
  return b[at]! < 0x80 ? 1 : 1 + (b[at]! & 0x7f);
}

function contentLength(b: Buffer, at: number): number {
  if (b[at]! < 0x80) return b[at]!;
  let n = 0;
  for (let k = 1; k <= (b[at]! & 0x7f); k++) n = n * 256 + b[at + k]!;
  return n;
}
