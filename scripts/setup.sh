#!/usr/bin/env bash
# Installs every build and test dependency of ringserve from Debian packages.
# Idempotent: packages already present are skipped, so a second run is quick.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libboost-dev libboost-system-dev
  libflatbuffers-dev flatbuffers-compiler
  libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libpci-dev pciutils
  libpcre2-dev libutf8proc-dev
  nlohmann-json3-dev
  libcli11-dev
  liburing-dev
  zlib1g-dev
  clang libclang-rt-14-dev
  clang-format
  curl ca-certificates python3

)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: missing packages: ${missing[*]}" >&2
    echo "setup.sh: run as root (or install them with sudo apt-get install)" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: all Debian packages present"
fi

# Node.js (for the OpenAI-client integration test) comes from Debian unless a
# newer one is already installed.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends nodejs npm
  else
    echo "setup.sh: node/npm missing; the HTTP client test will be skipped" >&2
  fi
fi

# Node packages for the HTTP integration tests live in a project-local folder.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -f "$root/tests/http/package.json" && ! -d "$root/tests/http/node_modules/openai" ]] &&
  command -v npm >/dev/null 2>&1; then
  echo "setup.sh: installing the openai npm client into tests/http/node_modules"
  (cd "$root/tests/http" && npm install --no-audit --no-fund --silent)
fi
