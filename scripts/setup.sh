#!/usr/bin/env bash
# Installs every Debian package moonrover needs to build, run, test and benchmark.
# Idempotent: packages already present are left alone; apt is touched only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkgconf clang llvm bpftool
  libbpf-dev libelf-dev libdw-dev zlib1g-dev libiberty-dev
  luajit libluajit-5.1-dev lua-busted lua-cjson
  libyaml-0-2 libyaml-dev
  libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
  libevent-dev libgrpc-dev protobuf-compiler-grpc
  libcurl4-openssl-dev libjson-c-dev
  python3-grpcio python3-protobuf
  golang-go linux-perf libc6-dbg time util-linux iproute2 libxml2-utils curl openssl
  clang-format lua-check
  nginx wrk redis-server redis-tools python3 bpftrace
  debootstrap podman runc lua-yaml
)
# The Kubernetes manifests' spec runs `kubectl create --dry-run=client`: any
# kubectl already on PATH does, else Debian's.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: these packages are missing and installing them needs root: ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
