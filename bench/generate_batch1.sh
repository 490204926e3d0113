#!/usr/bin/env bash
# Batch-1 decode speed of `plimsoll generate` (the serving engine at batch 1) on the
# random benchmark models. Prints one line per model: prompt and generation tokens/s.
# Usage: bench/generate_batch1.sh [MODEL-NAME...]   (default: llama-134m-q8_0)
set -euo pipefail
cd "$(dirname "$0")/.."
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(llama-134m-q8_0)
bench/models.sh "${names[@]}"
for name in "${names[@]}"; do
  for run in 1 2 3; do
    line=$(build/release/plimsoll generate -m "build/bench-models/$name.gguf" -p "Once upon a time" \
      -n 128 --ignore-eos --seed 1 2>&1 >/dev/null | tail -1)
    echo "$name run $run: $line"
  done
done
