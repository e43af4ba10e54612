#!/usr/bin/env bash
# Builds the local control plane's binaries from the Go module proxy, once, into a cache outside the
# repository: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (and helm or the
# session pods' authentication proxy, oauth2-proxy, or the real node's kubelet, ingress controller
# (Traefik), NetworkPolicy controller (kube-router) and volume provisioner (local-path-provisioner),
# when asked).
# Each tool family gets its own wrapper module so their dependency graphs never mix.
# Usage: build.sh [all|k8s|helm|auth-proxy|kubelet|traefik|network-policy|storage|etcd|kubernetes|kwok]...
#   Prints the binaries' directory as its last line. `build.sh keys` prints each tool's cache key.
#
# Each binary is cached under its key: a hash of its version in versions.env, the functions of this
# script that make it (module, flags) and the Go toolchain. A bump or a changed recipe builds anew; an
# unchanged one is found. The printed directory holds links to the binaries of this script's keys, so
# two checkouts with different versions never share one.
#
# Several targets at once overlap their downloads with the compiles: every pending module is resolved
# (go get: the module proxy's downloads) in the background from the start, while the binaries compile
# one after another (compiles compete for the cores, downloads hardly).
#
# Safe to run concurrently: each tool family is built under its own lock, so a second build of the same
# tool waits for the first and then finds its binary cached. Started by a Node caller, it ends with it
# (end-with-caller.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache_root=${IDE_CLOUD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ide-cloud}
cache="$cache_root/k8s"
store="$cache/store" # <tool>-<key>/<tool>
work="$cache/src"    # the wrapper modules, <family>-<key>/
mkdir -p "$store" "$work"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-local}

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# shellcheck source=end-with-caller.sh
source "$here/end-with-caller.sh"
trap '[ -z "$caller_watcher" ] || kill "$caller_watcher" 2>/dev/null || true
  for job in $(jobs -p); do kill "$job" 2>/dev/null || true; done' EXIT

# Seconds each binary took from empty Go caches on 2 cores (module download included), for the
# estimate of what is left; scaled by the cores this machine has.
declare -A typical=([etcd]=90 [kube-apiserver]=320 [kube-controller-manager]=105 [kube-scheduler]=10 [kwok]=110 [helm]=220 [oauth2-proxy]=90 [kubelet]=150 [traefik]=420 [kube-router]=320 [local-path-provisioner]=90)
usage="usage: build.sh [all|k8s|helm|auth-proxy|kubelet|traefik|network-policy|storage|etcd|kubernetes|kwok]... | keys"
tools=()
for target in "${@:-k8s}"; do
  case "$target" in
    k8s) tools+=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok) ;;
    helm) tools+=(helm) ;;
    auth-proxy) tools+=(oauth2-proxy) ;;
    kubelet) tools+=(kubelet) ;;
    traefik) tools+=(traefik) ;;
    network-policy) tools+=(kube-router) ;;
    storage) tools+=(local-path-provisioner) ;;
    all) tools+=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok helm) ;;
    etcd) tools+=(etcd) ;;
    kubernetes) tools+=(kube-apiserver kube-controller-manager kube-scheduler) ;;
    kwok) tools+=(kwok) ;;
    keys) ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
mapfile -t tools < <(printf '%s\n' "${tools[@]}" | awk 'NF && !seen[$0]++')

# `go get` without its line per downloaded module; its errors still show, and its status counts.
go_get() {
  { go get "$@" 2>&1 1>&3 | { grep -Ev '^go: (downloading|added|upgraded|finding) ' || true; } >&2; } 3>&1
}

# Creates a wrapper module from scratch unless a finished one (with go.sum) is there.
fresh_module() {
  local dir=$1
  [ -f "$dir/go.sum" ] && return 1
  rm -rf "$dir" && mkdir -p "$dir"
}

# compile <module dir> <package> <ldflags> <output>: the compile itself, as every key names it.
# -dwarf=false: the compiler skips the debug information that -ldflags -w drops at link time anyway
# (about a tenth less compile time, the same machine code).
compile() {
  (cd "$1" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "$3" -o "$4" "$2")
}

# ---- The recipes. Each family's resolve_* prepares its wrapper module (downloads); its make_* compiles.

resolve_etcd() {
  local dir=$1
  if fresh_module "$dir"; then
    log "etcd: resolving go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/etcd >/dev/null 2>&1 && go_get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION")
  fi
}
make_etcd() { build_one etcd "$1" go.etcd.io/etcd/server/v3; }

# The wrapper module of the Kubernetes components (kube-apiserver, kube-controller-manager,
# kube-scheduler and, for the real node, kubelet).
resolve_kubernetes() {
  local dir=$1 v=$K8S_VERSION
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

make_kubernetes() {
  local ld c
  ld=$(kubernetes_ldflags)
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    build_one "$c" "$1" "k8s.io/kubernetes/cmd/$c" "$ld"
  done
}

# kubelet, for the real node (control-plane.ts, realNode): the same wrapper module and version as the
# API server; its few extra modules are added to that module once (a marker records it).
resolve_kubelet() {
  local dir=$1 v=$K8S_VERSION
  resolve_kubernetes "$dir"
  if [ ! -f "$dir/.kubelet-resolved" ]; then
    log "kubelet: resolving k8s.io/kubernetes/cmd/kubelet@v$v"
    (cd "$dir" && go_get "k8s.io/kubernetes/cmd/kubelet@v$v")
    touch "$dir/.kubelet-resolved"
  fi
}
make_kubelet() { build_one kubelet "$1" k8s.io/kubernetes/cmd/kubelet "$(kubernetes_ldflags)"; }

resolve_kwok() {
  local dir=$1
  if fresh_module "$dir"; then
    log "kwok: resolving sigs.k8s.io/kwok@v$KWOK_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/kwok >/dev/null 2>&1 && go_get "sigs.k8s.io/kwok@v$KWOK_VERSION")
  fi
}
make_kwok() { build_one kwok "$1" sigs.k8s.io/kwok/cmd/kwok; }

resolve_helm() {
  local dir=$1
  if fresh_module "$dir"; then
    log "helm: resolving helm.sh/helm/v3@v$HELM_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/helm >/dev/null 2>&1 && go_get "helm.sh/helm/v3@v$HELM_VERSION")
  fi
}
make_helm() {
  # The Kubernetes version helm assumes offline (helm template, lint) is set at link time, as upstream does.
  local dir=$1 kmm kmi
  kmm=1; kmi=$(cd "$dir" && go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
  build_one helm "$dir" helm.sh/helm/v3/cmd/helm "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$kmm -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kmi \
-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$kmm -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kmi"
}

# oauth2-proxy: the host's proxy (test/support/auth-proxy.ts) and the one in the auth-proxy image
# (scripts/images/build.sh hands this binary to its Dockerfile's build stage).
resolve_oauth2_proxy() {
  local dir=$1
  if fresh_module "$dir"; then
    log "oauth2-proxy: resolving github.com/oauth2-proxy/oauth2-proxy/v7@v$OAUTH2_PROXY_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/oauth2-proxy >/dev/null 2>&1 &&
      go_get "github.com/oauth2-proxy/oauth2-proxy/v7@v$OAUTH2_PROXY_VERSION")
  fi
}
make_oauth2_proxy() {
  build_one oauth2-proxy "$1" github.com/oauth2-proxy/oauth2-proxy/v7 \
    "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=v$OAUTH2_PROXY_VERSION"
}

# A wrapper module that requires <module>@v<version> with the upstream go.mod's go, replace and
# exclude lines (a fork or a refused version there: without them the dependency graph differs from
# upstream's and does not resolve), then `go get <package>`.
upstream_module() {
  local dir=$1 name=$2 module=$3 v=$4 pkg=$5
  log "$name: resolving $module@v$v"
  local upstream
  upstream=$(cd "$dir" && go mod download -json "$module@v$v" 2>/dev/null | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
  {
    echo "module ide-cloud.local/$name"
    echo
    grep -E '^go ' "$upstream"
    echo
    echo "require $module v$v"
    echo
    sed -n '/^replace (/,/^)/p' "$upstream"
    grep -E '^(replace|exclude) [^(]' "$upstream" || true
    sed -n '/^exclude (/,/^)/p' "$upstream"
  } > "$dir/go.mod"
  (cd "$dir" && go_get "$pkg@v$v")
}

# Traefik, the real node's ingress controller. Its upstream go.mod replaces three modules by forks and
# excludes a version the module proxy refuses. Its web UI stays the module's placeholder (no
# dashboard; routing is all the real node needs).
resolve_traefik() {
  if fresh_module "$1"; then
    upstream_module "$1" traefik github.com/traefik/traefik/v3 "$TRAEFIK_VERSION" github.com/traefik/traefik/v3/cmd/traefik
  fi
  traefik_lego "$1"
}
# lego's DNS providers are left out (traefik-lego/dns_providers.go says why): the wrapper module
# replaces lego by a copy of it whose providers/dns package is that file, written anew with every
# resolve (its hash is in the key). The dependency graph stays upstream's.
traefik_lego() {
  local dir=$1 lego
  if [ ! -d "$dir/lego" ]; then
    lego=$(cd "$dir" && go mod download -json github.com/go-acme/lego/v4 | sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p')
    [ -n "$lego" ] || { log "traefik: lego's module not found"; return 1; }
    cp -r "$lego" "$dir/lego.tmp" && chmod -R u+w "$dir/lego.tmp" && mv "$dir/lego.tmp" "$dir/lego"
    (cd "$dir" && go mod edit -replace github.com/go-acme/lego/v4=./lego)
  fi
  rm -f "$dir"/lego/providers/dns/*.go
  cp "${sources[traefik]}" "$dir/lego/providers/dns/"
}
make_traefik() {
  build_one traefik "$1" github.com/traefik/traefik/v3/cmd/traefik \
    "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=v$TRAEFIK_VERSION"
}

# kube-router, the real node's NetworkPolicy controller: only its firewall runs (the CNI bridge routes
# the pods and no Services are proxied), so the binary is kube-router-firewall/main.go, its firewall's
# start-up alone, in the wrapper module (always the repository's copy; its hash is in the key).
resolve_kube_router() {
  local dir=$1
  if fresh_module "$dir"; then
    log "kube-router: resolving github.com/cloudnativelabs/kube-router/v2@v$KUBE_ROUTER_VERSION"
    (cd "$dir" && go mod init ide-cloud.local/kube-router >/dev/null 2>&1 &&
      go_get "github.com/cloudnativelabs/kube-router/v2@v$KUBE_ROUTER_VERSION")
  fi
  cp "${sources[kube_router]}" "$dir/main.go"
}
make_kube_router() {
  build_one kube-router "$1" . \
    "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=v$KUBE_ROUTER_VERSION"
}

# local-path-provisioner, the real node's dynamic volume provisioner (Rancher's, as kind and k3s ship
# it). Its main package is its module's root; its go.mod has no replace or exclude lines today, and
# any it gains are copied into the wrapper module, as for Traefik.
resolve_local_path_provisioner() {
  if fresh_module "$1"; then
    upstream_module "$1" local-path-provisioner github.com/rancher/local-path-provisioner \
      "$LOCAL_PATH_PROVISIONER_VERSION" github.com/rancher/local-path-provisioner
  fi
}
make_local_path_provisioner() {
  build_one local-path-provisioner "$1" github.com/rancher/local-path-provisioner \
    "-s -w -X main.VERSION=v$LOCAL_PATH_PROVISIONER_VERSION"
}

# ---- Families: the binaries one wrapper module makes, under one lock, and what their keys hash.

family_of() {
  case "$1" in
    kube-apiserver | kube-controller-manager | kube-scheduler) echo kubernetes ;;
    oauth2-proxy) echo oauth2_proxy ;;
    kube-router) echo kube_router ;;
    local-path-provisioner) echo local_path_provisioner ;;
    *) echo "$1" ;;
  esac
}
# The versions.env entry of each family.
declare -A version_var=([etcd]=ETCD_VERSION [kubernetes]=K8S_VERSION [kubelet]=K8S_VERSION [kwok]=KWOK_VERSION
  [helm]=HELM_VERSION [oauth2_proxy]=OAUTH2_PROXY_VERSION [traefik]=TRAEFIK_VERSION
  [kube_router]=KUBE_ROUTER_VERSION [local_path_provisioner]=LOCAL_PATH_PROVISIONER_VERSION)
# The functions besides resolve_<family> and make_<family> that shape its binaries.
declare -A helpers=([kubernetes]="kubernetes_ldflags" [kubelet]="resolve_kubernetes kubernetes_ldflags"
  [traefik]="upstream_module traefik_lego" [local_path_provisioner]=upstream_module)
# The kubelet resolves into the Kubernetes components' module, under their lock.
declare -A module_of=([kubelet]=kubernetes)
# The packages each family compiles: loading them downloads every module the compile needs, so the
# downloads happen while the binaries before compile, not in the compile.
declare -A packages=([etcd]=go.etcd.io/etcd/server/v3
  [kubernetes]="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler"
  [kubelet]=k8s.io/kubernetes/cmd/kubelet [kwok]=sigs.k8s.io/kwok/cmd/kwok [helm]=helm.sh/helm/v3/cmd/helm
  [oauth2_proxy]=github.com/oauth2-proxy/oauth2-proxy/v7 [traefik]=github.com/traefik/traefik/v3/cmd/traefik
  [kube_router]=.
  [local_path_provisioner]=github.com/rancher/local-path-provisioner)
download() {
  # shellcheck disable=SC2086 # a list of packages
  (cd "$1" && go list -deps ${packages[$2]} >/dev/null)
}

go_toolchain=$(go version)
hash16() { sha256sum | cut -c1-16; }
# What every binary's build shares: the toolchain, its environment and the functions around `go`.
common_recipe() {
  echo "$go_toolchain CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS"
  declare -f go_get fresh_module compile
}
# The Go sources of the repository a family compiles (its resolve_* copies them into its module).
declare -A sources=([kube_router]="$here/kube-router-firewall/main.go" [traefik]="$here/traefik-lego/dns_providers.go")
family_key() {
  local f=$1 var=${version_var[$1]}
  { common_recipe; echo "$var=${!var}"; declare -f "resolve_$f" "make_$f" ${helpers[$f]:-}
    [ -z "${sources[$f]:-}" ] || cat "${sources[$f]}"; } | hash16
}
# A wrapper module is keyed by what resolves it (the kubelet adds to the Kubernetes components' one).
module_dir() {
  local m=${module_of[$1]:-$1} var=${version_var[$1]}
  echo "$work/$m-$({ common_recipe; echo "$var=${!var}"; declare -f "resolve_$m"; } | hash16)"
}
all_tools=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok helm oauth2-proxy kubelet traefik kube-router local-path-provisioner)
declare -A key
for t in "${all_tools[@]}"; do key[$t]=$(family_key "$(family_of "$t")"); done
binary() { echo "$store/$1-${key[$1]}/$1"; }

if [ "${1:-}" = keys ]; then
  for t in "${all_tools[@]}"; do echo "$t ${key[$t]}"; done
  exit 0
fi

# The directory of links this script's keys name, the same for every target.
bin="$cache/bin-$(for t in "${all_tools[@]}"; do echo "$t ${key[$t]}"; done | hash16)"
mkdir -p "$bin"

# Holds the lock of one tool family for the rest of the calling function's subshell.
lock() {
  exec 9>"$cache/.$1.lock"
  flock 9
}

cores=$(nproc 2>/dev/null || echo 2)
pending=()
for t in "${tools[@]}"; do [ -x "$(binary "$t")" ] || pending+=("$t"); done
expected() { echo $(( typical[$1] * 2 / (cores < 2 ? 2 : cores) )); }
minutes() { local s=$1; if [ "$s" -lt 60 ]; then echo "under a minute"; else echo "about $(( (s + 30) / 60 )) min"; fi; }
# The position of a binary among the pending ones, and the seconds expected for those after it.
position() { local i; for i in "${!pending[@]}"; do [ "${pending[$i]}" = "$1" ] && echo $(( i + 1 )) && return; done; echo 0; }
left_after() { local sum=0 i; for i in "${pending[@]:$1}"; do sum=$(( sum + $(expected "$i") )); done; echo "$sum"; }

if [ ${#pending[@]} -gt 0 ]; then
  total=0; for t in "${pending[@]}"; do total=$(( total + $(expected "$t") )); done
  log "building ${pending[*]} from the Go module proxy: $(minutes "$total") on $cores cores with empty caches, once"
fi

# build_one <name> <module dir> <package> [ldflags]: compiles into the binary's keyed place, unless there.
build_one() {
  local name=$1 dir=$2 pkg=$3 ldflags=${4:-"-s -w"} out
  out=$(binary "$name")
  if [ -x "$out" ]; then log "$name: cached"; link "$name"; return; fi
  local step label start=$SECONDS after
  step=$(position "$name")
  label="($step/${#pending[@]}) $name"
  after=$(left_after "$step")
  log "$label: building (typically $(minutes "$(expected "$name")"); $(minutes $(( after + $(expected "$name") ))) left in all)"
  # Its sleep goes with it: a sleep left behind would hold the caller's pipes open for up to 30 s.
  (
    trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    while :; do
      sleep 30 &
      sleeper=$!
      wait "$sleeper"
      local spent=$(( SECONDS - start )) rest=$(( $(expected "$name") - (SECONDS - start) ))
      [ "$rest" -lt 0 ] && rest=0
      log "$label: still building, ${spent} s so far; $(minutes $(( rest + after ))) left in all"
    done
  ) &
  local ticker=$!
  local status=0
  mkdir -p "$(dirname "$out")"
  compile "$dir" "$pkg" "$ldflags" "$out.tmp" || status=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  [ "$status" -eq 0 ] || exit "$status"
  mv "$out.tmp" "$out"
  link "$name"
  log "$label: built in $((SECONDS - start)) s"
}

# The printed directory's link to a binary (the same target in every run with these keys).
link() {
  [ -L "$bin/$1" ] || ln -s "$(binary "$1")" "$bin/$1"
}

# The families of the asked tools, in order, each once.
mapfile -t families < <(for t in "${tools[@]}"; do family_of "$t"; done | awk '!seen[$0]++')
family_pending() {
  local t
  for t in "${pending[@]}"; do [ "$(family_of "$t")" = "$1" ] && return 0; done
  return 1
}
family_lock() { local m=${module_of[$1]:-$1}; echo "${m//_/-}"; }

# Every pending family's module resolves in the background now; the compiles wait for theirs in turn.
declare -A resolving
for f in "${families[@]}"; do
  if family_pending "$f"; then
    ( lock "$(family_lock "$f")"; "resolve_$f" "$(module_dir "$f")"; download "$(module_dir "$f")" "$f" ) &
    resolving[$f]=$!
  fi
done
for f in "${families[@]}"; do
  if [ -z "${resolving[$f]:-}" ]; then
    for t in "${tools[@]}"; do [ "$(family_of "$t")" = "$f" ] && { log "$t: cached"; link "$t"; }; done
    continue
  fi
  wait "${resolving[$f]}" || exit $?
  ( lock "$(family_lock "$f")"; "make_$f" "$(module_dir "$f")" )
done
echo "$bin"
