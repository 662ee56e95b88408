#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine of this project's kind: installs every Debian
# package the build, tests and benchmarks need, and the npm packages pinned in package-lock.json.
# Safe to run repeatedly; does nothing when everything is already there.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"

debs=(
  build-essential cmake ninja-build pkg-config git
  clang clang-format clang-tidy libclang-rt-14-dev
  libtree-sitter-dev libsimdjson-dev libcli11-dev libtomlplusplus-dev libssl-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev zlib1g-dev libmimalloc-dev
  chromium
  nodejs
)
# `setup.sh --bench` adds what the baselines in ../shared/baselines need (the seed design is Rust,
# built offline against Debian's packaged crates).
if [ "${1:-}" = "--bench" ]; then
  debs+=(librust-serde-json-dev librust-anyhow-dev librust-serde-derive-dev hyperfine)
fi
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Some images ship a nodejs that bundles npm, and cargo through rustup; Debian splits them out.
command -v npm >/dev/null 2>&1 || missing+=(npm)
# cargo runs the Rust binding's tests (`cargo test --offline`, no crate dependencies).
command -v cargo >/dev/null 2>&1 || missing+=(cargo)
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm: the tree-sitter grammar (C sources compiled by CMake) and the viewer's JS. The grammar's
# install script only builds a Node binding we do not use, hence --ignore-scripts.
stamp=node_modules/.cg-lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  echo "setup: installing npm packages (npm ci)"
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
