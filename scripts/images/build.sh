#!/usr/bin/env bash
# Builds container images with buildah, without Docker and without a registry, into a private buildah
# store in the cache (outside the repository), and exports them as OCI archives for a node's containerd.
#
#   build.sh [auth-proxy|pause|stand-ins]...   Prints the OCI archive of each image built, one a line.
#
# The project's own Dockerfiles are built unchanged (`buildah bud --layers --pull=never`). The base
# images their FROM lines name are stand-ins made here, tagged with the public names:
#   debian:<v>-slim          a debootstrap minbase of bookworm (Debian's packages);
#   golang:<v>-bookworm      that base with ca-certificates and Go <v> (the toolchain module of the Go
#                            module proxy, golang.org/toolchain), plus the machine's extra CA certificates
#                            (a TLS-intercepting proxy): a build stage only, never a published image;
#   registry.k8s.io/pause:<v> a static Go program that waits for SIGTERM, in an image from scratch.
# Each image carries the hash of its inputs as a label; an image whose inputs are unchanged is not rebuilt.
#
# Build steps run on the host network (no CNI bridge, no iptables rules, nothing under /etc/cni).
# Safe to run concurrently: one lock for the whole store.
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
# containers/storage leaves its overlay home bind-mounted on itself: nothing of this script stays mounted.
trap 'mountpoint -q "$store/root/overlay" && umount "$store/root/overlay" || true' EXIT

log() { printf '[images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

command -v buildah >/dev/null && command -v debootstrap >/dev/null || {
  echo "buildah and debootstrap are missing: run scripts/cluster/install-real-node-packages.sh (as root)" >&2
  exit 1
}

bah() { buildah --root "$store/root" --runroot "$store/runroot" --storage-driver overlay "$@"; }

# buildah bud with its steps' output in a log file (shown when the build fails).
bud() {
  local out="$store/$1.log"; shift
  bah bud --quiet "$@" >"$out" 2>&1 || { tail -30 "$out" >&2; echo "buildah bud failed (log: $out)" >&2; exit 1; }
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

auth_proxy() {
  debian_standin
  golang_standin
  local image=docker.io/ide-cloud/auth-proxy:0.1.0 inputs
  inputs=$({
    for base in "$debian_image" "$golang_image"; do bah inspect --type image --format '{{.FromImageID}}' "$base"; done
    echo "OAUTH2_PROXY_VERSION=$OAUTH2_PROXY_VERSION"
    find "$root/images/auth-proxy" -type f -print0 | sort -z | xargs -0 sha256sum | sed "s|$root/||"
  } | hash_of)
  if [ "$(built_hash "$image")" != "$inputs" ]; then
    local start=$SECONDS
    log "$image: buildah bud images/auth-proxy/Dockerfile (unchanged; about 5 min on 2 cores the first time)"
    bud auth-proxy --layers --pull=never --network host --format oci -f "$auth_proxy_dockerfile" \
      --build-arg "OAUTH2_PROXY_VERSION=$OAUTH2_PROXY_VERSION" \
      --label "ide-cloud.inputs=$inputs" -t "$image" "$root"
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
    pause) pause ;;
    stand-ins) debian_standin; golang_standin ;;
    *) echo "usage: build.sh [auth-proxy|pause|stand-ins]..." >&2; exit 2 ;;
  esac
done
