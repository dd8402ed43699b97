#!/usr/bin/env bash
# Builds ringserve on the lent GPU machine (Ubuntu 24.04, CUDA 13, no network).
# That machine lacks FlatBuffers, libpci, PCRE2 and liburing: the Debian
# packages are downloaded here into .deps/ (git-ignored, carried along) by
#   mkdir -p .deps && cd .deps && apt-get download flatbuffers-compiler \
#     libflatbuffers-dev libflatbuffers2 libpci-dev libpci3 libpcre2-dev \
#     libpcre2-8-0 liburing-dev liburing2 zlib1g-dev libutf8proc-dev libutf8proc2
# (files renamed to <package>.deb) and unpacked there into /opt/deps.
#
# Usage (on the GPU machine): source scripts/gpu_machine_build.sh [build-dir] [targets...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-build-gpu}
shift || true

if [[ ! -x /opt/deps/usr/bin/flatc ]]; then
  mkdir -p /opt/deps
  for deb in "$root"/.deps/*.deb; do dpkg -x "$deb" /opt/deps; done
fi
export PATH=/opt/deps/usr/bin:$PATH
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PKG_CONFIG_PATH=/opt/deps/usr/lib/x86_64-linux-gnu/pkgconfig:/opt/deps/usr/share/pkgconfig:${PKG_CONFIG_PATH:-}
export CPATH=/opt/deps/usr/include/x86_64-linux-gnu:/opt/deps/usr/include:${CPATH:-}

# The pkg-config files carry prefix=/usr; point them at /opt/deps.
for pc in /opt/deps/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
  sed -i 's|^prefix=/usr$|prefix=/opt/deps/usr|' "$pc"
done

cmake -S "$root" -B "$root/$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGSERVE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${RINGSERVE_CUDA_ARCHS:-90}" -DCMAKE_PREFIX_PATH=/opt/deps/usr \
  -DFLATC_EXECUTABLE=/opt/deps/usr/bin/flatc
if (($#)); then
  cmake --build "$root/$build" -j "$(nproc)" --target "$@"
else
  cmake --build "$root/$build" -j "$(nproc)"
fi
