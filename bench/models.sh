#!/usr/bin/env bash
# Generates the random-weight benchmark models (real Llama shapes) into
# build/bench-models/ unless they are there already. Usage: bench/models.sh [NAME...]
#   llama-134m-<dtype>: dim 768, 12 layers, 12 heads, FFN 2048, vocab 32000 ("110M" shape)
#   llama-1.1b-<dtype>: dim 2048, 22 layers, 32 heads, 4 KV heads, FFN 5632, vocab 32000 (TinyLlama shape)
# <dtype> is any `plimsoll convert --dtype`, e.g. q8_0, q4_k, q6_k or q4_k_m (llama.cpp's Q4_K_M mix).
# Context 2048 tokens, or N x 1024 with an N k part: llama-134m-8k-q8_0, llama-1.1b-32k-f16.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release/plimsoll
out=build/bench-models
mkdir -p "$out"
[ -x "$bin" ] || scripts/build release plimsoll >&2
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(llama-134m-q8_0)
for name in "${names[@]}"; do
  file="$out/$name.gguf"
  [ -f "$file" ] && continue
  dtype=${name##*-}
  case "$name" in
    llama-134m-*) shape=(--dim 768 --layers 12 --heads 12 --kv-heads 12 --ffn 2048) ;;
    llama-1.1b-*) shape=(--dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632) ;;
    *) echo "unknown model $name" >&2; exit 2 ;;
  esac
  context=2048
  [[ $name =~ -([0-9]+)k- ]] && context=$((BASH_REMATCH[1] * 1024))
  "$bin" convert --random "${shape[@]}" --vocab-size 32000 --context "$context" --dtype "$dtype" -o "$file" >&2
done
