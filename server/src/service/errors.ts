import type { z } from 'zod';
import { ErrorCode } from '../model/error-codes.js';
import type { ErrorBody } from '../model/requests.js';
import { describeFailure } from '../kube/client.js';

/**
 * The one error type of the service. The HTTP status equals `code` (DESIGN.md). `reason` is shown to
 * callers and written to logs, so it must never carry a secret or a caller-supplied value other than
 * a resource name.
 */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    readonly details?: ErrorBody['details'],
    readonly headers: Record<string, string> = {},
  ) {
    super(reason);
    this.name = 'ApiError';
  }

  get body(): ErrorBody {
    return { code: this.code, reason: this.reason, ...(this.details ? { details: this.details } : {}) };
  }

  static badRequest(reason: string, details?: ErrorBody['details']): ApiError {
    return new ApiError(ErrorCode.badRequest, reason, details);
  }

  /** A zod failure as a 400 with one detail per issue. Issue messages never echo the input value. */
  static fromZod(error: z.ZodError, what = 'request'): ApiError {
    const details = error.issues.map((issue) => {
      // A refused map key: its own rule's message, and the path of the map, not the key itself.
      const key = issue.code === 'invalid_key' ? issue : undefined;
      const path = key ? issue.path.slice(0, -1) : issue.path;
      return {
        path: path.map(String).join('.') || '(root)',
        message: key?.issues[0]?.message ?? issue.message,
      };
    });
    return ApiError.badRequest(`invalid ${what}`, details);
  }
}

/**
 * A wait that ended because the service is shutting down (its caches stopped). The caller's
 * connection is being closed, so nobody sees it; a launch that gets it leaves what it created, as a
 * process that exits would.
 */
export class ServiceStopping extends ApiError {
  constructor() {
    super(503, 'the service is stopping');
    this.name = 'ServiceStopping';
  }
}

/**
 * The API server gave no answer: the call's deadline passed (`IDE_CLOUD_API_REQUEST_TIMEOUT_MS`) or
 * no connection could be made. Answered 503 with `Retry-After`; the reason says only that, never
 * what the client library reported. A write that timed out may still take effect once the API server
 * answers again, as with any client: a retried launch finds its session by the workspace's name.
 */
export class ApiServerUnavailable extends ApiError {
  constructor(why: 'timeout' | 'unreachable') {
    super(
      503,
      why === 'timeout'
        ? 'the Kubernetes API server did not answer in time; retry later'
        : 'the Kubernetes API server is not reachable; retry later',
      undefined,
      { 'Retry-After': String(API_SERVER_RETRY_AFTER_SECONDS) },
    );
    this.name = 'ApiServerUnavailable';
  }
}

/** What `Retry-After` tells a caller when the API server did not answer. */
export const API_SERVER_RETRY_AFTER_SECONDS = 5;

/**
 * A write lost a race: the API server answered 409 (the name is taken, or the object changed since
 * it was read). Callers that expect the race recognise it by type; others answer it as a 409.
 */
export class Conflict extends ApiError {
  constructor(action: string) {
    super(409, `${action} was changed concurrently; retry`);
    this.name = 'Conflict';
  }
}

/** What may be logged about any error: never a message that could quote request values. */
export function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof ApiError) return { code: error.code, reason: error.reason };
  return describeFailure(error);
}
