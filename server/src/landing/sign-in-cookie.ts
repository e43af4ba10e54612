/**
 * The landing page's sign-in, kept for the browser's other tabs: a new tab of a signed-in student
 * launches at once instead of a round trip through the identity provider. The access token the page
 * got is sealed (AES-256-GCM) into an HttpOnly cookie that only this origin's own requests carry:
 * the `__Host-` prefix (Secure, no Domain: a sibling host such as the session host, which serves
 * the student's IDE, cannot set or shadow it), SameSite=Strict, and no Max-Age, so it ends with the
 * browser, like the tab's own sign-in. The page's script never reads it; the page's API calls add
 * the token as the bearer they would have sent.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { CookieOptions, Request, Response } from 'express';
import { decodeJwt } from 'jose';

export const SIGN_IN_COOKIE = '__Host-ide-cloud-sign-in';
/** A sealed token is refused after its own expiry and after this long, whichever comes first. */
const MAX_AGE_MS = 12 * 60 * 60_000;
/** A token this close to its expiry is not kept: the next tab would launch with it and be refused. */
const EXPIRY_MARGIN_MS = 60_000;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SignIn {
  /** The access token, sent on as `Bearer` to the service. */
  token: string;
  /** The signed-in user's e-mail (the service checks it against the token). */
  user: string;
  /** Milliseconds since the epoch after which the seal is refused. */
  expiresAt: number;
}

const COOKIE_OPTIONS: CookieOptions = { httpOnly: true, secure: true, sameSite: 'strict', path: '/' };

export class SignInCookie {
  private readonly key: Buffer;

  /** `secret`: the landing page's own secret (the service auth token); the key is derived from it. */
  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'ide-cloud', 'landing page sign-in cookie', 32));
  }

  /**
   * The sign-in to keep for this token and user, or undefined when the token is not a JWT with an
   * expiry far enough ahead (an opaque token keeps the round trip through the provider).
   */
  signInOf(token: string, user: string, now = Date.now()): SignIn | undefined {
    let exp: number | undefined;
    try {
      exp = decodeJwt(token).exp;
    } catch {
      return undefined;
    }
    if (typeof exp !== 'number') return undefined;
    const expiresAt = Math.min(exp * 1000, now + MAX_AGE_MS);
    return expiresAt - EXPIRY_MARGIN_MS > now ? { token, user, expiresAt } : undefined;
  }

  seal(signIn: SignIn): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(signIn), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /** The sealed sign-in, or undefined when it was not sealed with this key, is malformed or has expired. */
  open(sealed: string, now = Date.now()): SignIn | undefined {
    const raw = Buffer.from(sealed, 'base64url');
    if (raw.length <= IV_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
      const signIn = JSON.parse(text.toString('utf8')) as Partial<SignIn>;
      if (typeof signIn.token !== 'string' || typeof signIn.user !== 'string') return undefined;
      if (typeof signIn.expiresAt !== 'number' || signIn.expiresAt - EXPIRY_MARGIN_MS <= now) return undefined;
      return { token: signIn.token, user: signIn.user, expiresAt: signIn.expiresAt };
    } catch {
      return undefined;
    }
  }

  /** The request's kept sign-in, if its cookie holds a valid one. */
  read(req: Request): SignIn | undefined {
    const sealed = cookieValue(req.get('cookie'), SIGN_IN_COOKIE);
    return sealed ? this.open(sealed) : undefined;
  }

  write(res: Response, signIn: SignIn): void {
    res.cookie(SIGN_IN_COOKIE, this.seal(signIn), COOKIE_OPTIONS);
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
