# Sourced by the build scripts (scripts/cluster/build.sh, scripts/images/build.sh). With
# IDE_CLOUD_BUILD_WATCH_STDIN=1, set by the Node callers (processes.ts runScript), which start the
# script leading its own process group with a pipe on its stdin: when the caller dies, however it dies,
# the pipe closes and the whole group ends. The script kills $caller_watcher when it exits.
caller_watcher=
if [ "${IDE_CLOUD_BUILD_WATCH_STDIN:-}" = 1 ]; then
  exec 8<&0
  { cat <&8 >/dev/null; kill -TERM -- -$$; } >/dev/null 2>&1 &
  caller_watcher=$!
fi
