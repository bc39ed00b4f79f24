import { createCipheriv, createDecipheriv, createHash, generateKeyPairSync, randomBytes } from 'node:crypto';

export interface WireGuardKeyPair {
  /** 32-byte Curve25519 keys in WireGuard's form: standard base64, 44 characters. */
  privateKey: string;
  publicKey: string;
}

/** A new WireGuard key pair: x25519 from node:crypto (the same curve and clamping as `wg genkey`). */
export function generateWireGuardKeyPair(): WireGuardKeyPair {
  const { privateKey } = generateKeyPairSync('x25519');
  const jwk = privateKey.export({ format: 'jwk' });
  return {
    privateKey: Buffer.from(jwk.d!, 'base64url').toString('base64'),
    publicKey: Buffer.from(jwk.x!, 'base64url').toString('base64'),
  };
}

const VERSION = 'v1';

/**
 * Client private keys are kept encrypted at rest (AES-256-GCM) because the installation
 * instructions of GET /vpn/{vid} must show a complete configuration whenever an admin asks
 * (POST /vpn answers with no body, so "shown once" is impossible). The license ID is the
 * associated data: a ciphertext copied onto another row does not decrypt.
 */
export class VpnKeyBox {
  private readonly key: Buffer;

  constructor(secret: string) {
    // The secret is random (store) or operator-chosen (VPN_KEY_SECRET, >= 16 chars): a hash suffices.
    this.key = createHash('sha256').update(`rampart-vpn-keys:${secret}`).digest();
  }

  seal(plaintext: string, vid: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(vid));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
  }

  /** The private key, or null when it was erased or cannot be decrypted (another secret). */
  open(sealed: string, vid: string): string | null {
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== VERSION || !iv || !tag || !body) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
      decipher.setAAD(Buffer.from(vid));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}
