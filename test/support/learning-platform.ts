// The one allowed stand-in: a learning platform speaking its real token contract (DESIGN.md):
// GET {base}/api/core/account/participation-vcs-access-token?participationId=<id> with
// `Authorization: Bearer <platform token>` answers the participation's token as plain text, or 404 when
// it has none; PUT on the same URL creates one. A platform token that is not valid gets 401.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const PARTICIPATION_TOKEN_PATH = '/api/core/account/participation-vcs-access-token';

export interface PlatformRequest {
  method: string;
  participationId: string | null;
  status: number;
}

export interface LearningPlatform {
  url: string;
  requests: PlatformRequest[];
  /** Platform tokens accepted as bearer tokens. */
  validTokens: Set<string>;
  /** Participation id → its current VCS access token. */
  participationTokens: Map<string, string>;
  /** Participations that exist (PUT may create a token for these). */
  participations: Set<string>;
  /** Called with each token PUT creates, e.g. to register it with the git server. */
  onTokenCreated?: (participationId: string, token: string) => void;
  close(): Promise<void>;
}

/** `host`: the address to listen on (default loopback; the URL names it). */
export async function startLearningPlatform(host = '127.0.0.1'): Promise<LearningPlatform> {
  const platform: Omit<LearningPlatform, 'url' | 'close'> = {
    requests: [],
    validTokens: new Set(),
    participationTokens: new Map(),
    participations: new Set(),
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const participationId = url.searchParams.get('participationId');
    const answer = (status: number, body: string) => {
      platform.requests.push({ method: req.method ?? 'GET', participationId, status });
      res.writeHead(status, { 'Content-Type': 'text/plain' }).end(body);
    };
    if (url.pathname !== PARTICIPATION_TOKEN_PATH) return answer(404, 'not found');
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!bearer || !platform.validTokens.has(bearer)) return answer(401, 'unauthorized');
    if (!participationId || !platform.participations.has(participationId)) return answer(404, 'no such participation');
    if (req.method === 'GET') {
      const token = platform.participationTokens.get(participationId);
      return token ? answer(200, token) : answer(404, 'no token yet');
    }
    if (req.method === 'PUT') {
      const token = `vcs-${randomBytes(12).toString('hex')}`;
      platform.participationTokens.set(participationId, token);
      platform.onTokenCreated?.(participationId, token);
      return answer(200, token);
    }
    return answer(405, 'method not allowed');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const result = platform as LearningPlatform;
  result.url = `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`;
  result.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return result;
}
