import { sessionNameFor, landingWorkspaceName } from '../model/names.js';
import type { LaunchParameters } from './params.js';

/** An answer of the service, passed on to the browser as it came (status and JSON error body). */
export interface Forwarded {
  status: number;
  contentType: string;
  body: string;
}

/** The service's word on a bearer token for a user (ServiceClient.confirmsUser). */
export type UserConfirmation = 'confirmed' | 'refused' | 'unavailable';

/** The workspace and session a landing-page launch of these parameters uses (DESIGN.md name rule). */
export function launchTarget(
  appDefinition: string,
  user: string,
  gitUri?: string,
): { workspaceName: string; sessionName: string } {
  const workspaceName = landingWorkspaceName(appDefinition, user, gitUri);
  return { workspaceName, sessionName: sessionNameFor(workspaceName) };
}

/**
 * The landing page's side of the REST API: it adds the service auth token (appId) to each call, so
 * the token never reaches a browser, and passes the user's bearer token on untouched.
 */
export class ServiceClient {
  constructor(
    private readonly baseUrl: string,
    private readonly appId: string,
  ) {}

  private headers(authorization: string | undefined, json: boolean): Record<string, string> {
    return {
      accept: 'application/json, text/plain, text/event-stream',
      ...(json ? { 'content-type': 'application/json' } : {}),
      ...(authorization ? { authorization } : {}),
    };
  }

  /** The service's URL of these path segments, each encoded (a user or workspace may hold any character). */
  private url(...segments: string[]): string {
    return [this.baseUrl, ...segments.map(encodeURIComponent)].join('/');
  }

  private async forward(response: Response): Promise<Forwarded> {
    return {
      status: response.status,
      contentType: response.headers.get('content-type') ?? 'application/json',
      body: await response.text(),
    };
  }

  /** The public ping: true when the service answers and says it is healthy. */
  async ping(signal?: AbortSignal): Promise<boolean> {
    try {
      const response = await fetch(this.url('service', this.appId), {
        signal: signal ?? AbortSignal.timeout(10_000),
      });
      return response.ok && (await response.json()) === true;
    } catch {
      return false;
    }
  }

  /**
   * Whether the service takes `authorization` as `user`'s bearer (its auth layer: the issuer's keys,
   * the audience, the user claim): its listing of the user's workspaces, asked and not used. Refused
   * for 401 and 403; unavailable when the service gives no such answer (nor a listing).
   */
  async confirmsUser(user: string, authorization: string): Promise<UserConfirmation> {
    try {
      const response = await fetch(this.url('service', 'workspace', this.appId, user), {
        headers: this.headers(authorization, false),
        // The bearer goes to the service only, never to wherever a redirect points.
        redirect: 'error',
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok) {
        await response.body?.cancel();
        return response.status === 401 || response.status === 403 ? 'refused' : 'unavailable';
      }
      return Array.isArray(await response.json()) ? 'confirmed' : 'unavailable';
    } catch {
      return 'unavailable';
    }
  }

  /** POST /service (blocks until the session URL is there, up to the service's launch timeout). */
  async launch(
    input: {
      appDefinition: string;
      user?: string;
      workspaceName: string;
      label: string;
      params: LaunchParameters;
      env: Record<string, string>;
    },
    authorization: string | undefined,
    signal: AbortSignal,
  ): Promise<Forwarded> {
    const response = await fetch(this.url('service'), {
      method: 'POST',
      headers: this.headers(authorization, true),
      body: JSON.stringify({
        appId: this.appId,
        ...(input.user ? { user: input.user } : {}),
        appDefinition: input.appDefinition,
        workspaceName: input.workspaceName,
        label: input.label,
        env: { fromMap: input.env },
      }),
      signal,
    });
    return this.forward(response);
  }

  /** DELETE /service/session: stops the session (true also when already gone). */
  async stop(sessionName: string, user: string | undefined, authorization: string | undefined): Promise<Forwarded> {
    const response = await fetch(this.url('service', 'session'), {
      method: 'DELETE',
      headers: this.headers(authorization, true),
      body: JSON.stringify({ appId: this.appId, ...(user ? { user } : {}), sessionName }),
      signal: AbortSignal.timeout(30_000),
    });
    return this.forward(response);
  }

  /** GET /service/session/events/…: the progress stream of a workspace's session (Server-Sent Events). */
  events(
    user: string,
    workspaceName: string,
    authorization: string | undefined,
    signal: AbortSignal,
  ): Promise<Response> {
    const url = this.url('service', 'session', 'events', this.appId, user, workspaceName);
    return fetch(url, { headers: this.headers(authorization, false), signal });
  }
}
