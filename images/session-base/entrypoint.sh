#!/bin/sh
# Entrypoint of every session image. With the environment strategy the values are in the environment
# already, so the agent clones before the IDE starts; with the data bridge (eager, prewarmed
# instances) the values arrive later, at the bridge process: the agent started beside the IDE waits for
# them there and clones as soon as they land, whether or not a browser has opened the IDE yet. The
# agent extension inside the IDE runs the same setup once a browser opens it: it waits for this one
# (a lock beside the workspace folder), finds the clone done, and shows any failure to the student.
set -eu

WORKSPACE_DIR="${WORKSPACE_DIR:-/home/ide/workspace}"
IDE_PORT="${IDE_PORT:-3000}"
mkdir -p "$WORKSPACE_DIR"
# The work folder may be the root of a workspace's claim, owned by whoever provisioned the volume: git
# (the agent's clone, the student's commits) must still take the repository in it as the student's.
if ! git config --global --get-all safe.directory 2>/dev/null | grep -qxF "$WORKSPACE_DIR"; then
  git config --global --add safe.directory "$WORKSPACE_DIR" || echo "ide-cloud: could not mark $WORKSPACE_DIR as safe for git" >&2
fi

if [ "${SESSION_ENV_STRATEGY:-env}" != "data-bridge" ] && [ -n "${GIT_URI:-}" ]; then
  echo "ide-cloud: preparing the workspace" >&2
  # A failed clone must not keep the student out of the IDE: the agent says what went wrong.
  ide-cloud-agent bootstrap --dir "$WORKSPACE_DIR" || echo "ide-cloud: the repository was not cloned (see above); starting the IDE anyway" >&2
fi

case "$(printf '%s' "${DATA_BRIDGE_ENABLED:-}" | tr -d ' ' | tr '[:upper:]' '[:lower:]')" in
  1 | true)
    # The bridge runs on its own, so the values (and the user the session's proxy admits) land as soon
    # as the instance is claimed, before any browser opens the IDE; the extension reads them from it.
    node "${DATA_BRIDGE_PROCESS:-/opt/ide-cloud/bridge/bridge.mjs}" &
    export DATA_BRIDGE_URL="http://127.0.0.1:${DATA_BRIDGE_PORT:-16281}"
    if [ "${SESSION_ENV_STRATEGY:-env}" = "data-bridge" ]; then
      # Detached (its parent exits at once, so tini reaps it); it reads the bridge's token from the
      # environment, and the values reach it over loopback: no secret in any process's arguments.
      (
        (ide-cloud-agent bootstrap --dir "$WORKSPACE_DIR" --from-bridge \
          || echo "ide-cloud: the repository was not cloned (see above); the IDE says why once opened" >&2) &
      )
    fi
    ;;
esac

# Workspace trust stays on: the repository comes from a link anyone can craft, and its tasks or
# settings must not run before the student trusts it. The session's own extensions (agent, data
# bridge) declare that they work in an untrusted workspace.
exec code-server \
  --bind-addr "0.0.0.0:${IDE_PORT}" \
  --auth none \
  --disable-telemetry \
  --disable-update-check \
  "$WORKSPACE_DIR"
