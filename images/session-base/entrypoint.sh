#!/bin/sh
# Entrypoint of every session image. With the environment strategy the values are in the environment
# already, so the agent clones while the IDE starts; with the data bridge (eager, prewarmed
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

# The IDE's first screen for this work folder (an app definition may move it): the page opens it and
# trusts it and nothing else, the machine settings keep the Welcome page and the chat away. An image
# built for this folder and user data directory has it in place (first-screen.built-for): no script
# runs then, unless the page's trust module or the machine settings are not there (an image built on
# this one that replaced them, a volume over the user data directory). On a failure code-server is
# given the folder (IDE_FOLDER), and its redirect to `?folder=` opens it, in Restricted Mode: the page
# would open the folder the image was built for.
IDE_FOLDER=""
CODE_SERVER_DIR="${CODE_SERVER_DIR:-/usr/local/lib/node_modules/code-server}"
USER_DATA_DIR="${XDG_DATA_HOME:-$HOME/.local/share}/code-server"
if [ "$(cat "${FIRST_SCREEN_BUILT_FOR:-/opt/ide-cloud/first-screen.built-for}" 2>/dev/null)" \
  = "$(printf '%s\n%s' "$WORKSPACE_DIR" "$USER_DATA_DIR")" ] \
  && grep -qF '<!-- ide-cloud: trust the work folder -->' \
    "$CODE_SERVER_DIR/lib/vscode/out/vs/code/browser/workbench/workbench.html" 2>/dev/null \
  && grep -qF '"chat.disableAIFeatures"' "$USER_DATA_DIR/Machine/settings.json" 2>/dev/null; then
  :
else
  node "${FIRST_SCREEN_SCRIPT:-/opt/ide-cloud/first-screen.mjs}" \
    --code-server "$CODE_SERVER_DIR" \
    --work-folder "$WORKSPACE_DIR" \
    --user-data-dir "$USER_DATA_DIR" >&2 \
    || {
      echo "ide-cloud: could not prepare the IDE's first screen; $WORKSPACE_DIR may open in Restricted Mode" >&2
      IDE_FOLDER="$WORKSPACE_DIR"
    }
fi

if [ "${SESSION_ENV_STRATEGY:-env}" != "data-bridge" ] && [ -n "${GIT_URI:-}" ]; then
  echo "ide-cloud: preparing the workspace" >&2
  # Beside the IDE's start, not before it, and behind it for the CPU (nice): the IDE's start is on the
  # way to the student's first page, the clone is done long before the workbench asks for the files.
  # Detached, as below; a failed clone never keeps the student out of the IDE, whose agent extension
  # says what went wrong.
  (
    (nice -n 10 ide-cloud-agent bootstrap --dir "$WORKSPACE_DIR" \
      || echo "ide-cloud: the repository was not cloned (see above); the IDE says why once opened" >&2) &
  )
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

# Workspace trust stays on: the work folder, where the platform clones the launch's repository, is
# trusted (above); any other folder (a link with another ?folder=, a clone elsewhere) opens restricted,
# its tasks and settings held back until the student trusts it. The session's own extensions (agent,
# data bridge) declare that they work in an untrusted workspace.
# No folder (but for IDE_FOLDER above): the page opens the work folder itself (first-screen.mjs), with
# no redirect to `?folder=` on the session URL, a round trip through the ingress and the proxy; nor the
# folder last opened, so the session URL always opens the work folder.
# code-server's server without code-server's wrapper process, asked for its first page as soon as it
# listens (start-code-server.mjs).
exec node "${START_CODE_SERVER_SCRIPT:-/opt/ide-cloud/start-code-server.mjs}" \
  --bind-addr "0.0.0.0:${IDE_PORT}" \
  --auth none \
  --disable-telemetry \
  --disable-update-check \
  --ignore-last-opened \
  ${IDE_FOLDER:+"$IDE_FOLDER"}
