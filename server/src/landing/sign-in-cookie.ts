/**
 * The landing page's sign-in, kept for the browser's other tabs: a new tab of a signed-in student
 * launches at once instead of a round trip through the identity provider. The access token the page
 * got, and its refresh token when the provider issued one, are sealed (AES-256-GCM) into an HttpOnly
 * cookie that only this origin's own requests carry: the `__Host-` prefix (Secure, no Domain: a sibling
 * host such as the session host, which serves the student's IDE, cannot set or shadow it),
 * SameSite=Strict, and no Max-Age, so it ends with the browser, like the tab's own sign-in. The page's
 * script never reads it; the page's API calls add the token as the bearer they would have sent. With a
 * refresh token the page's server renews the access token when it runs out (kept-sign-in.ts), up to
 * 12 hours after the sign-in.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { CookieOptions, Request, Response } from 'express';
import { decodeJwt } from 'jose';

export const SIGN_IN_COOKIE = '__Host-ide-cloud-sign-in';
/** A sign-in is kept this long at most, however often its access token is renewed. */
const MAX_AGE_MS = 12 * 60 * 60_000;
/** A token this close to its expiry is not sent on: the next tab would launch with it and be refused. */
const EXPIRY_MARGIN_MS = 60_000;
/**
 * Browsers drop a cookie over 4096 bytes (name, value and attributes) without a word; a seal longer
 * than this leaves the refresh token out, the access token alone still fits.
 */
const MAX_SEALED_LENGTH = 3800;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SignIn {
  /** The access token, sent on as `Bearer` to the service. */
  token: string;
  /** The signed-in user's e-mail (the service checks it against the token). */
  user: string;
  /** Milliseconds since the epoch after which the access token is not sent on. */
  expiresAt: number;
  /** The provider's refresh token, which renews the access token until `keptUntil`. */
  refreshToken?: string;
  /** Milliseconds since the epoch after which the seal is refused (default `expiresAt`). */
  keptUntil?: number;
}

const COOKIE_OPTIONS: CookieOptions = { httpOnly: true, secure: true, sameSite: 'strict', path: '/' };

export class SignInCookie {
  private readonly key: Buffer;

  /** `secret`: the landing page's cookie secret (config.ts); the key is derived from it. */
  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'ide-cloud', 'landing page sign-in cookie', 32));
  }

  /**
   * The sign-in to keep for this token and user, or undefined when the token is not a JWT with an
   * expiry (an opaque token keeps the round trip through the provider) or, without a refresh token,
   * when that expiry is too near.
   */
  signInOf(token: string, user: string, refreshToken?: string, now = Date.now()): SignIn | undefined {
    const keptUntil = now + MAX_AGE_MS;
    const signIn = this.renewed({ token, user, expiresAt: now, keptUntil }, token, refreshToken, now);
    if (!signIn || (!signIn.refreshToken && this.expiring(signIn, now))) return undefined;
    return signIn;
  }

  /**
   * `signIn` with a renewed access token (and the refresh token that came with it, else the one it
   * had), or undefined when the new token is not a JWT with an expiry or the sign-in is over.
   */
  renewed(signIn: SignIn, token: string, refreshToken?: string, now = Date.now()): SignIn | undefined {
    let exp: number | undefined;
    try {
      exp = decodeJwt(token).exp;
    } catch {
      return undefined;
    }
    const keptUntil = signIn.keptUntil ?? signIn.expiresAt;
    if (typeof exp !== 'number' || keptUntil <= now) return undefined;
    const kept = refreshToken ?? signIn.refreshToken;
    const expiresAt = Math.min(exp * 1000, keptUntil);
    return { token, user: signIn.user, expiresAt, keptUntil, ...(kept ? { refreshToken: kept } : {}) };
  }

  /** Whether the access token is too near its expiry to be sent on: renew it first, if it can be. */
  expiring(signIn: SignIn, now = Date.now()): boolean {
    return signIn.expiresAt - EXPIRY_MARGIN_MS <= now;
  }

  seal(signIn: SignIn): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(signIn), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /**
   * The sealed sign-in, or undefined when it was not sealed with this key, is malformed or is over: its
   * access token near expiry with no refresh token, or past `keptUntil`. One with a refresh token may
   * come back `expiring`, to be renewed before use.
   */
  open(sealed: string, now = Date.now()): SignIn | undefined {
    const raw = Buffer.from(sealed, 'base64url');
    if (raw.length <= IV_BYTES + TAG_BYTES) return undefined;
    let signIn: Partial<SignIn>;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
      signIn = JSON.parse(text.toString('utf8')) as Partial<SignIn>;
    } catch {
      return undefined;
    }
    const { token, user, expiresAt, refreshToken } = signIn;
    if (typeof token !== 'string' || typeof user !== 'string' || typeof expiresAt !== 'number') return undefined;
    const keptUntil = typeof signIn.keptUntil === 'number' ? signIn.keptUntil : expiresAt;
    const renewable = typeof refreshToken === 'string' && keptUntil - EXPIRY_MARGIN_MS > now;
    if (this.expiring({ token, user, expiresAt }, now) && !renewable) return undefined;
    return { token, user, expiresAt, keptUntil, ...(renewable ? { refreshToken } : {}) };
  }

  /** The request's kept sign-in, if its cookie holds a valid one. */
  read(req: Request): SignIn | undefined {
    const sealed = cookieValue(req.get('cookie'), SIGN_IN_COOKIE);
    return sealed ? this.open(sealed) : undefined;
  }

  write(res: Response, signIn: SignIn): void {
    let sealed = this.seal(signIn);
    if (sealed.length > MAX_SEALED_LENGTH && signIn.refreshToken) {
      const { refreshToken: _dropped, ...withoutRefresh } = signIn;
      sealed = this.seal({ ...withoutRefresh, keptUntil: signIn.expiresAt });
    }
    res.cookie(SIGN_IN_COOKIE, sealed, COOKIE_OPTIONS);
  }

  clear(res: Response): void {
    res.clearCookie(SIGN_IN_COOKIE, COOKIE_OPTIONS);
  }
}

/** One cookie's value from a Cookie header (RFC 6265 pairs; the value is base64url, never quoted). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}
