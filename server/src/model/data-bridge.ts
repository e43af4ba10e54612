/**
 * The data bridge's credentials, shared by the operator (which creates and sends them) and the pod
 * template (which hands them to the bridge): a per-instance token in a Secret, sent as
 * `Authorization: Bearer <token>` on POST /data with the reservation it injects for. The bridge
 * (extension/src/config.ts, server.ts) reads the same names.
 */
export const DATA_BRIDGE_TOKEN_ENV = 'DATA_BRIDGE_TOKEN';
/** Key of the token in the instance's Secret. */
export const DATA_BRIDGE_TOKEN_KEY = 'token';
/** Header naming the reservation (the Session's uid): the bridge takes one injection per reservation. */
export const DATA_BRIDGE_RESERVATION_HEADER = 'x-ide-cloud-reservation';
/**
 * Where the bridge writes the session's user when it takes an injection (`user` in the body): the
 * allowed-users file of the session's authentication proxy, which admits nobody else.
 */
export const DATA_BRIDGE_USERS_FILE_ENV = 'DATA_BRIDGE_USERS_FILE';
