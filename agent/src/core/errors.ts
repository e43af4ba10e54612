// Typed failures of the agent. Each carries a stable `code`, a message that never holds a secret, and a
// `hint`: what the user or the integrator can do about it. The fronts print message and hint.

export type AgentErrorCode =
  | 'MissingValue'
  | 'PlatformTokenExpired'
  | 'PlatformUnreachable'
  | 'PlatformError'
  | 'PlatformUrlInvalid'
  | 'PlatformUrlInsecure'
  | 'CredentialRequired'
  | 'CredentialRefused'
  | 'RepositoryNotFound'
  | 'GitRemoteUnreachable'
  | 'WorkspaceConflict'
  | 'GitFailed'
  | 'NoRepository'
  | 'RepositoryChanged'
  | 'UnknownTemplate'
  | 'BridgeUnavailable'
  | 'BridgeRefused'
  | 'WorkspaceBusy';

export class AgentError extends Error {
  constructor(
    readonly code: AgentErrorCode,
    message: string,
    readonly hint: string,
  ) {
    super(message);
    this.name = 'AgentError';
  }
}

export function missingValue(key: string, hint: string): AgentError {
  return new AgentError('MissingValue', `${key} is not set`, hint);
}

/** One line for a log or a notification: the message, then what to do. */
export function describeError(error: unknown): string {
  if (error instanceof AgentError) return `${error.message}. ${error.hint}`;
  return error instanceof Error ? error.message : String(error);
}
