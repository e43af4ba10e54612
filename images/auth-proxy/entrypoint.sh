#!/bin/sh
# Entrypoint of the authentication proxy. oauth2-proxy needs its allowed-users file at start, while a
# warm instance's file is written only when the instance is claimed: an empty file admits nobody until
# then, and the proxy reloads the file when it changes. Its one writer is the admission beside it
# (admission/main.go), which writes it when the operator gives it a token (warm instances with an
# identity provider); the file's volume is mounted in this container only. The same process answers
# the readiness probe of the IDE container when the operator gives it an address for it.
set -eu
if [ -n "${AUTH_PROXY_USERS_FILE:-}" ] && [ ! -e "$AUTH_PROXY_USERS_FILE" ]; then
  : > "$AUTH_PROXY_USERS_FILE"
fi
if [ -n "${AUTH_PROXY_ADMISSION_TOKEN_FILE:-}" ] || [ -n "${AUTH_PROXY_READY_ADDRESS:-}" ]; then
  ide-cloud-admission &
fi
exec oauth2-proxy "$@"
