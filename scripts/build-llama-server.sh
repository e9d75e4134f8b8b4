#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` into .runtime-llama/bin from the sources vendored in the
# pinned llama-cpp-python sdist (scripts/llama-cpp-requirements.txt). Idempotent; called by
# scripts/setup.sh. ~6 min on 2 idle cores, once. Skip with CLAWLOOP_NO_LLAMA=1 (rollouts then use
# the transformers backend). The build is native (-march=native): rebuild on another CPU with
#   rm -rf .runtime-llama && scripts/build-llama-server.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.runtime-llama
REQ=scripts/llama-cpp-requirements.txt
if [ -x "$OUT/bin/llama-server" ] && [ "$OUT/.installed" -nt "$REQ" ]; then exit 0; fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
  echo "[llama] apt-get install ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
SRC=.deps/llama-src
rm -rf "$SRC" && mkdir -p "$SRC"
echo "[llama] fetching the pinned llama-cpp-python sdist (llama.cpp sources)"
.venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
  --require-hashes -r "$REQ" -d "$SRC"
tar xzf "$SRC"/llama_cpp_python-*.tar.gz -C "$SRC"
LLAMA=$(echo "$SRC"/llama_cpp_python-*/vendor/llama.cpp)
echo "[llama] building llama-server (about 6 min on 2 idle cores, once)"
start=$(date +%s)
# No web UI (it would be fetched), no TLS, static: one self-contained binary.
cmake -S "$LLAMA" -B "$SRC/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >"$SRC/cmake.log" 2>&1 \
  || { tail -20 "$SRC/cmake.log"; exit 1; }
cmake --build "$SRC/build" -j"$(nproc)" --target llama-server >"$SRC/build.log" 2>&1 \
  || { tail -30 "$SRC/build.log"; exit 1; }
rm -rf "$OUT" && mkdir -p "$OUT/bin"
install -m 755 "$SRC/build/bin/llama-server" "$OUT/bin/llama-server"
"$OUT/bin/llama-server" --version >"$OUT/version.txt" 2>&1 || true
touch "$OUT/.installed"
rm -rf "$SRC"
echo "[llama] llama-server built in $(( $(date +%s) - start )) s: $OUT/bin/llama-server"
