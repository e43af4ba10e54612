#!/bin/sh
# Entrypoint of the authentication proxy. oauth2-proxy needs its allowed-users file at start, while a
# warm instance's file is written only when the instance is claimed (by the data bridge, on the shared
# volume): an empty file admits nobody until then, and the proxy reloads the file when it changes.
set -eu
if [ -n "${AUTH_PROXY_USERS_FILE:-}" ] && [ ! -e "$AUTH_PROXY_USERS_FILE" ]; then
  : > "$AUTH_PROXY_USERS_FILE"
fi
exec oauth2-proxy "$@"
