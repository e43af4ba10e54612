/**
 * Error codes of the REST API (DESIGN.md), also written by the operator into a Failed session's
 * `status.error`, so a refusal reads the same whichever side noticed it.
 */
export const ErrorCode = {
  badRequest: 400,
  unauthorized: 401,
  forbidden: 403,
  notFound: 404,
  payloadTooLarge: 413,
  /** Too many waiting launches of a workspace or user (`LAUNCH_WAITERS`), also over a stream cap. */
  tooManyWaiters: 429,
  invalidAppId: 470,
  unknownWorkspace: 471,
  unknownAppDefinition: 473,
  unknownSession: 474,
  workspaceAppDefinitionMismatch: 475,
  internal: 500,
  metricsUnavailable: 521,
  launchTimeout: 551,
  maxInstancesReached: 552,
  sessionsPerUserReached: 553,
  workspacesPerUserReached: 554,
  noConfigStore: 580,
} as const;
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];
