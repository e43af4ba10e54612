#!/usr/bin/env bash
# Builds the local control plane's binaries from the Go module proxy, once, into a cache outside the
# repository: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (and helm when asked).
# Each tool family gets its own wrapper module so their dependency graphs never mix.
# Usage: build.sh [all|k8s|helm]   Prints the cache directory as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
what=${1:-k8s}
cache_root=${IDE_CLOUD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ide-cloud}
bin="$cache_root/k8s/v$K8S_VERSION/bin"
work="$cache_root/k8s/v$K8S_VERSION/src"
mkdir -p "$bin" "$work"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-local}

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# build_one <name> <module dir> <package> [ldflags]
build_one() {
  local name=$1 dir=$2 pkg=$3 ldflags=${4:-"-s -w"}
  if [ -x "$bin/$name" ]; then log "$name: cached"; return; fi
  log "$name: building $pkg (minutes on a cold cache)"
  local start=$SECONDS
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  log "$name: built in $((SECONDS - start)) s"
}

build_etcd() {
  local dir="$work/etcd"
  if [ ! -f "$dir/go.sum" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$dir" && go mod init ide-cloud.local/etcd >/dev/null 2>&1 && go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION")
  fi
  build_one etcd "$dir" go.etcd.io/etcd/server/v3
}

build_kubernetes() {
  local dir="$work/kubernetes" v=$K8S_VERSION
  local minor=${v#*.}; minor=${minor%%.*}
  if [ ! -f "$dir/go.sum" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    log "kubernetes: resolving k8s.io/kubernetes@v$v"
    local upstream
    upstream=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@v$v" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
    {
      echo "module ide-cloud.local/kubernetes"
      echo
      grep -E '^(go|godebug) ' "$upstream"
      echo
      echo "require k8s.io/kubernetes v$v"
      echo
      # Every staging module the upstream requires at v0.0.0 is replaced by its published v0.<minor>.<patch>.
      grep -E '^\s+k8s\.io/[^ ]+ v0\.0\.0$' "$upstream" | awk -v ver="v0.${v#*.}" '{print "replace " $1 " => " $1 " " ver}'
    } > "$dir/go.mod"
    (cd "$dir" && go get "k8s.io/kubernetes/cmd/kube-apiserver@v$v" \
      "k8s.io/kubernetes/cmd/kube-controller-manager@v$v" "k8s.io/kubernetes/cmd/kube-scheduler@v$v")
  fi
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=v$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    build_one "$c" "$dir" "k8s.io/kubernetes/cmd/$c" "$ld"
  done
}

build_kwok() {
  local dir="$work/kwok"
  if [ ! -f "$dir/go.sum" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$dir" && go mod init ide-cloud.local/kwok >/dev/null 2>&1 && go get "sigs.k8s.io/kwok@v$KWOK_VERSION")
  fi
  build_one kwok "$dir" sigs.k8s.io/kwok/cmd/kwok
}

build_helm() {
  local dir="$work/helm"
  if [ ! -f "$dir/go.sum" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$dir" && go mod init ide-cloud.local/helm >/dev/null 2>&1 && go get "helm.sh/helm/v3@v$HELM_VERSION")
  fi
  # The Kubernetes version helm assumes offline (helm template, lint) is set at link time, as upstream does.
  local kmm kmi
  kmm=1; kmi=$(cd "$dir" && go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
  build_one helm "$dir" helm.sh/helm/v3/cmd/helm "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$kmm -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kmi \
-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$kmm -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kmi"
}

case "$what" in
  k8s) build_etcd; build_kubernetes; build_kwok ;;
  helm) build_helm ;;
  all) build_etcd; build_kubernetes; build_kwok; build_helm ;;
  *) echo "usage: build.sh [all|k8s|helm]" >&2; exit 2 ;;
esac
echo "$bin"
