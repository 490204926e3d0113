#!/usr/bin/env bash
# The batched engine's figures for docs/benchmarks.md: machine peaks, then for
# each model prefill 512 and decode at batch 1, 4, 16, 64 with peak RSS
# against the plan. Usage: bench/engine_matrix.sh [MODEL-NAME...]
# (default: the 134M and 1.1B shapes in f32, f16, q8_0, q4_0; models are
# generated into build/bench-models/ on first use: ~8 GB of disk for all).
set -euo pipefail
cd "$(dirname "$0")/.."
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for size in 134m 1.1b; do for dtype in f32 f16 q8_0 q4_0; do names+=("llama-$size-$dtype"); done; done
fi
scripts/build release plimsoll machine_peaks >&2
echo "== machine"
build/release/machine_peaks 1
build/release/machine_peaks 2
for name in "${names[@]}"; do
  bench/models.sh "$name"
  echo "== $name"
  build/release/plimsoll bench -m "build/bench-models/$name.gguf" --memory-limit 16Gi \
    --batch 1,4,16,64 --prompt-tokens 512 --decode-tokens 16 --max-total-tokens 1024 | grep -v '^  '
done
