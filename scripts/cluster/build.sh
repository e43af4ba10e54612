#!/usr/bin/env bash
# Builds the local control plane's binaries from the Go module proxy, once, into a cache outside the
# repository: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (and helm or the
# session pods' authentication proxy, oauth2-proxy, or the real node's kubelet, ingress controller
# (Traefik), NetworkPolicy controller (kube-router) and volume provisioner (local-path-provisioner),
# when asked).
# Each tool family gets its own wrapper module so their dependency graphs never mix.
# Usage: build.sh [all|k8s|helm|auth-proxy|kubelet|traefik|network-policy|storage|etcd|kubernetes|kwok]
#   Prints the binaries' directory as its last line.
#
# Safe to run concurrently: each tool family is built under its own lock, so a second build of the same
# tool waits for the first and then finds its binary cached. Started by a Node caller, it ends with it
# (end-with-caller.sh).
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

# shellcheck source=end-with-caller.sh
source "$here/end-with-caller.sh"
trap '[ -z "$caller_watcher" ] || kill "$caller_watcher" 2>/dev/null || true' EXIT

# Seconds each binary took from empty Go caches on 2 cores (module download included), for the
# estimate of what is left; scaled by the cores this machine has.
declare -A typical=([etcd]=90 [kube-apiserver]=320 [kube-controller-manager]=105 [kube-scheduler]=10 [kwok]=110 [helm]=220 [oauth2-proxy]=90 [kubelet]=150 [traefik]=600 [kube-router]=450 [local-path-provisioner]=90)
case "$what" in
  k8s) tools=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok) ;;
  helm) tools=(helm) ;;
  auth-proxy) tools=(oauth2-proxy) ;;
  kubelet) tools=(kubelet) ;;
  traefik) tools=(traefik) ;;
  network-policy) tools=(kube-router) ;;
  storage) tools=(local-path-provisioner) ;;
  all) tools=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok helm) ;;
  etcd) tools=(etcd) ;;
  kubernetes) tools=(kube-apiserver kube-controller-manager kube-scheduler) ;;
  kwok) tools=(kwok) ;;
  *) echo "usage: build.sh [all|k8s|helm|auth-proxy|kubelet|traefik|network-policy|storage|etcd|kubernetes|kwok]" >&2; exit 2 ;;
esac
cores=$(nproc 2>/dev/null || echo 2)
pending=()
for t in "${tools[@]}"; do [ -x "$bin/$t" ] || pending+=("$t"); done
expected() { echo $(( typical[$1] * 2 / (cores < 2 ? 2 : cores) )); }
minutes() { local s=$1; if [ "$s" -lt 60 ]; then echo "under a minute"; else echo "about $(( (s + 30) / 60 )) min"; fi; }
# The position of a binary among the pending ones, and the seconds expected for those after it.
position() { local i; for i in "${!pending[@]}"; do [ "${pending[$i]}" = "$1" ] && echo $(( i + 1 )) && return; done; echo 0; }
left_after() { local sum=0 i; for i in "${pending[@]:$1}"; do sum=$(( sum + $(expected "$i") )); done; echo "$sum"; }

if [ ${#pending[@]} -gt 0 ]; then
  total=0; for t in "${pending[@]}"; do total=$(( total + $(expected "$t") )); done
  log "building ${pending[*]} from the Go module proxy: $(minutes "$total") on $cores cores with empty caches, once"
fi

# `go get` without its line per downloaded module; its errors still show, and its status counts.
go_get() {
  { go get "$@" 2>&1 1>&3 | { grep -Ev '^go: (downloading|added|upgraded|finding) ' || true; } >&2; } 3>&1
}

# Holds the lock of one tool family for the rest of the calling function's subshell.
lock() {
  exec 9>"$cache_root/k8s/v$K8S_VERSION/.$1.lock"
  flock 9
}

# build_one <name> <module dir> <package> [ldflags]
build_one() {
  local name=$1 dir=$2 pkg=$3 ldflags=${4:-"-s -w"}
  if [ -x "$bin/$name" ]; then log "$name: cached"; return; fi
  local step label start=$SECONDS after
  step=$(position "$name")
  label="($step/${#pending[@]}) $name"
  after=$(left_after "$step")
  log "$label: building (typically $(minutes "$(expected "$name")"); $(minutes $(( after + $(expected "$name") ))) left in all)"
  (
    while sleep 30; do
      local spent=$(( SECONDS - start )) rest=$(( $(expected "$name") - (SECONDS - start) ))
      [ "$rest" -lt 0 ] && rest=0
      log "$label: still building, ${spent} s so far; $(minutes $(( rest + after ))) left in all"
    done
  ) &
  local ticker=$!
  local status=0
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg") || status=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  [ "$status" -eq 0 ] || exit "$status"
  mv "$bin/$name.tmp" "$bin/$name"
  log "$label: built in $((SECONDS - start)) s"
}

# Creates a wrapper module from scratch unless a finished one (with go.sum) is there.
fresh_module() {
  local dir=$1
  [ -f "$dir/go.sum" ] && return 1
  rm -rf "$dir" && mkdir -p "$dir"
}

build_etcd() (
  lock etcd
  local dir="$work/etcd"
  if fresh_module "$dir"; then
    log "etcd: resolving go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/etcd >/dev/null 2>&1 && go_get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION")
  fi
  build_one etcd "$dir" go.etcd.io/etcd/server/v3
)

# The wrapper module of the Kubernetes components (kube-apiserver, kube-controller-manager,
# kube-scheduler and, for the real node, kubelet); the caller holds the kubernetes lock.
kubernetes_module() {
  local dir="$work/kubernetes" v=$K8S_VERSION
  if fresh_module "$dir"; then
    log "kubernetes: resolving k8s.io/kubernetes@v$v"
    local upstream
    upstream=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@v$v" 2>/dev/null | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
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
    (cd "$dir" && go_get "k8s.io/kubernetes/cmd/kube-apiserver@v$v" \
      "k8s.io/kubernetes/cmd/kube-controller-manager@v$v" "k8s.io/kubernetes/cmd/kube-scheduler@v$v")
  fi
}

kubernetes_ldflags() {
  local v=$K8S_VERSION minor
  minor=${v#*.}; minor=${minor%%.*}
  echo "-s -w -X k8s.io/component-base/version.gitVersion=v$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
}

build_kubernetes() (
  lock kubernetes
  kubernetes_module
  local dir="$work/kubernetes" ld
  ld=$(kubernetes_ldflags)
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    build_one "$c" "$dir" "k8s.io/kubernetes/cmd/$c" "$ld"
  done
)

# kubelet, for the real node (control-plane.ts, realNode): the same wrapper module and version as the
# API server; its few extra modules are added to that module once (a marker records it).
build_kubelet() (
  lock kubernetes
  kubernetes_module
  local dir="$work/kubernetes" v=$K8S_VERSION
  if [ ! -x "$bin/kubelet" ] && [ ! -f "$dir/.kubelet-resolved" ]; then
    log "kubelet: resolving k8s.io/kubernetes/cmd/kubelet@v$v"
    (cd "$dir" && go_get "k8s.io/kubernetes/cmd/kubelet@v$v")
    touch "$dir/.kubelet-resolved"
  fi
  build_one kubelet "$dir" k8s.io/kubernetes/cmd/kubelet "$(kubernetes_ldflags)"
)

build_kwok() (
  lock kwok
  local dir="$work/kwok"
  if fresh_module "$dir"; then
    log "kwok: resolving sigs.k8s.io/kwok@v$KWOK_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/kwok >/dev/null 2>&1 && go_get "sigs.k8s.io/kwok@v$KWOK_VERSION")
  fi
  build_one kwok "$dir" sigs.k8s.io/kwok/cmd/kwok
)

build_helm() (
  lock helm
  local dir="$work/helm"
  if fresh_module "$dir"; then
    log "helm: resolving helm.sh/helm/v3@v$HELM_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/helm >/dev/null 2>&1 && go_get "helm.sh/helm/v3@v$HELM_VERSION")
  fi
  # The Kubernetes version helm assumes offline (helm template, lint) is set at link time, as upstream does.
  local kmm kmi
  kmm=1; kmi=$(cd "$dir" && go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
  build_one helm "$dir" helm.sh/helm/v3/cmd/helm "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$kmm -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kmi \
-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$kmm -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kmi"
)

build_oauth2_proxy() (
  lock oauth2-proxy
  local dir="$work/oauth2-proxy"
  if fresh_module "$dir"; then
    log "oauth2-proxy: resolving github.com/oauth2-proxy/oauth2-proxy/v7@v$OAUTH2_PROXY_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/oauth2-proxy >/dev/null 2>&1 &&
      go_get "github.com/oauth2-proxy/oauth2-proxy/v7@v$OAUTH2_PROXY_VERSION")
  fi
  build_one oauth2-proxy "$dir" github.com/oauth2-proxy/oauth2-proxy/v7 \
    "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=v$OAUTH2_PROXY_VERSION"
)

# Traefik, the real node's ingress controller. Its upstream go.mod replaces three modules by forks and
# excludes a version the module proxy refuses: the wrapper module carries the same lines, or the
# dependency graph differs from upstream's and does not resolve. Its web UI stays the module's
# placeholder (no dashboard; routing is all the real node needs).
build_traefik() (
  lock traefik
  local dir="$work/traefik" v=$TRAEFIK_VERSION
  if fresh_module "$dir"; then
    log "traefik: resolving github.com/traefik/traefik/v3@v$v"
    local upstream
    upstream=$(cd "$dir" && go mod download -json "github.com/traefik/traefik/v3@v$v" 2>/dev/null | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
    {
      echo "module ide-cloud.local/traefik"
      echo
      grep -E '^go ' "$upstream"
      echo
      echo "require github.com/traefik/traefik/v3 v$v"
      echo
      sed -n '/^replace (/,/^)/p' "$upstream"
      grep -E '^(replace|exclude) [^(]' "$upstream" || true
      sed -n '/^exclude (/,/^)/p' "$upstream"
    } > "$dir/go.mod"
    (cd "$dir" && go_get "github.com/traefik/traefik/v3/cmd/traefik@v$v")
  fi
  build_one traefik "$dir" github.com/traefik/traefik/v3/cmd/traefik \
    "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=v$v"
)

# kube-router, the real node's NetworkPolicy controller (only its firewall runs: the CNI bridge routes
# the pods and no Services are proxied).
build_kube_router() (
  lock kube-router
  local dir="$work/kube-router"
  if fresh_module "$dir"; then
    log "kube-router: resolving github.com/cloudnativelabs/kube-router/v2@v$KUBE_ROUTER_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/kube-router >/dev/null 2>&1 &&
      go_get "github.com/cloudnativelabs/kube-router/v2@v$KUBE_ROUTER_VERSION")
  fi
  build_one kube-router "$dir" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router \
    "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=v$KUBE_ROUTER_VERSION"
)

# local-path-provisioner, the real node's dynamic volume provisioner (Rancher's, as kind and k3s ship it).
# Its main package is its module's root; its go.mod has no replace or exclude lines today, and any it
# gains are copied into the wrapper module, as for Traefik.
build_local_path_provisioner() (
  lock local-path-provisioner
  local dir="$work/local-path-provisioner" v=$LOCAL_PATH_PROVISIONER_VERSION
  if fresh_module "$dir"; then
    log "local-path-provisioner: resolving github.com/rancher/local-path-provisioner@v$v"
    local upstream
    upstream=$(cd "$dir" && go mod download -json "github.com/rancher/local-path-provisioner@v$v" 2>/dev/null | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
    {
      echo "module ide-cloud.local/local-path-provisioner"
      echo
      grep -E '^go ' "$upstream"
      echo
      echo "require github.com/rancher/local-path-provisioner v$v"
      echo
      sed -n '/^replace (/,/^)/p' "$upstream"
      grep -E '^(replace|exclude) [^(]' "$upstream" || true
      sed -n '/^exclude (/,/^)/p' "$upstream"
    } > "$dir/go.mod"
    (cd "$dir" && go_get "github.com/rancher/local-path-provisioner@v$v")
  fi
  build_one local-path-provisioner "$dir" github.com/rancher/local-path-provisioner "-s -w -X main.VERSION=v$v"
)

for t in "${tools[@]}"; do
  case "$t" in
    etcd) build_etcd ;;
    kube-apiserver) build_kubernetes ;;
    kwok) build_kwok ;;
    helm) build_helm ;;
    oauth2-proxy) build_oauth2_proxy ;;
    kubelet) build_kubelet ;;
    traefik) build_traefik ;;
    kube-router) build_kube_router ;;
    local-path-provisioner) build_local_path_provisioner ;;
  esac
done
echo "$bin"
