#!/usr/bin/env bash
# Installs what the real node (control-plane.ts, realNode) and the image builds (scripts/images) need,
# from Debian's packages: containerd, runc, the CNI plugins, iptables, ipset (for the NetworkPolicy
# controller), buildah, fuse-overlayfs, debootstrap and openssl (Traefik's default certificate). As
# root; nothing is started (no systemd here). About 15 s.
set -euo pipefail
packages=(containerd runc containernetworking-plugins iptables ipset buildah fuse-overlayfs debootstrap openssl)
missing=()
for p in "${packages[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" = 0 ] || { echo "the real node needs root to install: ${missing[*]}" >&2; exit 1; }
printf '[packages %s] apt-get install %s\n' "$(date +%H:%M:%S)" "${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
