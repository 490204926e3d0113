#!/usr/bin/env bash
# Quantizes the f16 random-weight 134M Llama (bench/models.sh llama-134m-f16) with llama.cpp's own
# llama-quantize into build/bench-models/llama-134m-lq-<type>.gguf, one file per llama-quantize
# type; the types that need an importance matrix get one from llama-imatrix run on TEXT.
# Usage: bench/llama_quantize.sh LLAMA_CPP_BUILD_DIR [TEXT] [TYPE...]
#   TEXT: any text file (default /usr/share/common-licenses/GPL-3); TYPE: llama-quantize type names
#   (default: every type below). Files already there are kept. llama.cpp is never part of this
#   repository: build it yourself (docs/benchmarks.md, "Building llama.cpp to compare").
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench/llama_quantize.sh LLAMA_CPP_BUILD_DIR [TEXT] [TYPE...]" >&2; exit 2; }
dir=$1
text=${2:-/usr/share/common-licenses/GPL-3}
shift $(( $# >= 2 ? 2 : 1 ))
tool() { for p in "$dir/bin/$1" "$dir/$1"; do [ -x "$p" ] && { echo "$p"; return; }; done; echo "no $1 in $dir" >&2; exit 2; }
quantize=$(tool llama-quantize)
imatrix_tool=$(tool llama-imatrix)
# llama-quantize refuses these without an importance matrix (some of their tensors are IQ1-IQ3_XXS or Q2_K).
needs_imatrix=" IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS Q2_K_S "
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Q4_1 Q5_0 Q5_1 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M
  IQ4_NL IQ4_XS IQ3_XXS IQ3_XS IQ3_S IQ3_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ1_S IQ1_M)
out=build/bench-models
src=$out/llama-134m-f16.gguf
bench/models.sh llama-134m-f16
imat=$out/llama-134m-f16.imatrix.gguf
for t in "${types[@]}"; do
  dst=$out/llama-134m-lq-${t,,}.gguf
  [ -f "$dst" ] && continue
  args=()
  if [[ $needs_imatrix == *" $t "* ]]; then
    if [ ! -f "$imat" ]; then
      # 32 chunks of 128 tokens of TEXT through the f16 model.
      "$imatrix_tool" -m "$src" -f "$text" -o "$imat" -c 128 --chunks 32 -t 2 >"$out/llama-imatrix.log" 2>&1 ||
        { tail -20 "$out/llama-imatrix.log" >&2; exit 1; }
    fi
    args=(--imatrix "$imat")
  fi
  "$quantize" "${args[@]}" "$src" "$dst" "$t" 2 >"$out/llama-quantize-${t,,}.log" 2>&1 ||
    { tail -20 "$out/llama-quantize-${t,,}.log" >&2; exit 1; }
  echo "$dst"
done
