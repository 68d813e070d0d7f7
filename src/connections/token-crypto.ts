import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Sealing of secrets at rest (OAuth tokens, client registrations, PKCE verifiers) with AES-256-GCM
 * under TOKEN_ENCRYPTION_KEY. A sealed value reads `v1.<key id>.<iv>.<ciphertext>.<tag>` (base64url
 * parts): the key id — a short hash of the key, which reveals nothing of a 256-bit random key —
 * picks the key to open with, so a value sealed before a rotation opens with
 * TOKEN_ENCRYPTION_KEY_PREVIOUS while every new seal uses the current key.
 *
 * Errors never carry key material or plaintext: they name the variable and what is wrong.
 */

const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12; // GCM's native nonce size: a random 96-bit IV per seal
const TAG_BYTES = 16;

export class TokenSealError extends Error {
  override name = 'TokenSealError';
}

/**
 * The 32-byte key given as base64 (standard or URL-safe alphabet), as `openssl rand -base64 32`
 * prints it. `name` is the variable it came from, for the message.
 */
export function parseEncryptionKey(base64: string, name = 'TOKEN_ENCRYPTION_KEY'): Buffer {
  const text = base64.trim();
  const hint = `${name} must be ${KEY_BYTES} random bytes as base64 (44 characters; make one with \`openssl rand -base64 32\`)`;
  if (text === '') throw new TokenSealError(`${name} is empty: ${hint}`);
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) throw new TokenSealError(`${name} is not base64: ${hint}`);
  const key = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (key.length !== KEY_BYTES) throw new TokenSealError(`${name} decodes to ${key.length} bytes: ${hint}`);
  return key;
}

/** 8 bytes of SHA-256 over a domain label and the key: enough to tell two keys apart. */
function keyIdOf(key: Buffer): string {
  return createHash('sha256')
    .update('countersign token key id\0')
    .update(key)
    .digest()
    .subarray(0, 8)
    .toString('base64url');
}

/** The authenticated header and the caller's context: a value sealed for one record does not open as another's. */
function additionalData(keyId: string, context: string): Buffer {
  return Buffer.from(`${VERSION}.${keyId}\0${context}`, 'utf8');
}

interface Key {
  id: string;
  bytes: Buffer;
}

export class TokenSealer {
  readonly #current: Key;
  readonly #keys: ReadonlyMap<string, Key>;

  /** `current` is TOKEN_ENCRYPTION_KEY, `previous` TOKEN_ENCRYPTION_KEY_PREVIOUS, both base64. */
  constructor(current: string, previous?: string) {
    const bytes = parseEncryptionKey(current, 'TOKEN_ENCRYPTION_KEY');
    this.#current = { id: keyIdOf(bytes), bytes };
    const keys = new Map([[this.#current.id, this.#current]]);
    if (previous !== undefined && previous.trim() !== '') {
      const old = parseEncryptionKey(previous, 'TOKEN_ENCRYPTION_KEY_PREVIOUS');
      const id = keyIdOf(old);
      if (!keys.has(id)) keys.set(id, { id, bytes: old });
    }
    this.#keys = keys;
  }

  /** The id of the key new seals use, as it appears in a sealed value (for rotation status, never secret). */
  get currentKeyId(): string {
    return this.#current.id;
  }

  /** The key id a sealed value names, or undefined when it is not a sealed value. */
  static keyIdOf(sealed: string): string | undefined {
    const parts = sealed.split('.');
    return parts.length === 5 && parts[0] === VERSION ? parts[1] : undefined;
  }

  /**
   * Seals `value` (anything JSON can hold) under the current key. `context` names the record the
   * value belongs to; opening with another context fails, so a sealed token moved to another
   * person's row in the database does not open there.
   */
  seal(value: unknown, context = ''): string {
    const plaintext = JSON.stringify(value);
    if (plaintext === undefined) throw new TokenSealError('Nothing to seal: the value has no JSON form');
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#current.bytes, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(additionalData(this.#current.id, context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const parts = [iv, ciphertext, cipher.getAuthTag()].map((b) => b.toString('base64url'));
    return [VERSION, this.#current.id, ...parts].join('.');
  }

  /** Opens what `seal` made with the same `context`, under the current or the previous key. */
  open(sealed: string, context = ''): unknown {
    const parts = sealed.split('.');
    const [version, keyId, iv, ciphertext, tag] = parts;
    if (parts.length !== 5 || version !== VERSION || !keyId || !iv || !tag || ciphertext === undefined) {
      throw new TokenSealError('Not a sealed value (expected v1.<key id>.<iv>.<ciphertext>.<tag>)');
    }
    const key = this.#keys.get(keyId);
    if (!key) {
      throw new TokenSealError(
        `Sealed under key ${keyId}, which is neither TOKEN_ENCRYPTION_KEY nor TOKEN_ENCRYPTION_KEY_PREVIOUS: ` +
          'set the key it was sealed with as TOKEN_ENCRYPTION_KEY_PREVIOUS, or have the person connect again',
      );
    }
    return JSON.parse(this.#decrypt(key, iv, ciphertext, tag, context));
  }

  #decrypt(key: Key, iv: string, ciphertext: string, tag: string, context: string): string {
    const ivBytes = Buffer.from(iv, 'base64url');
    const tagBytes = Buffer.from(tag, 'base64url');
    if (ivBytes.length !== IV_BYTES || tagBytes.length !== TAG_BYTES) {
      throw new TokenSealError('Sealed value is damaged: its IV or tag has the wrong length');
    }
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, ivBytes, { authTagLength: TAG_BYTES });
    decipher.setAAD(additionalData(key.id, context));
    decipher.setAuthTag(tagBytes);
    try {
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      // GCM says only "unable to authenticate"; the cause (tampering, another record's value) is not knowable.
      throw new TokenSealError('Sealed value failed authentication: it was altered, or belongs to another record');
    }
  }
}
