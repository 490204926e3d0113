#!/usr/bin/env bash
# Prefill and decode of `plimsoll bench` on one or more binaries, ISA paths and
# GGUF files, alternated round by round (binary, then ISA, then file, innermost),
# one line per sample: round, binary, ISA, file, prefill tok/s, decode tok/s.
# Usage: bench/isa_rounds.sh [-r ROUNDS] [-b "BIN..."] [-i "ISA..."] [-t THREADS] FILE...
#   defaults: 3 rounds, build/release/plimsoll, "avx2 avx512", 2 threads;
#   ISA names as PLIMSOLL_ISA takes them (scalar, avx2, avx2-vnni, avx512, amx).
# Each sample: --batch 1 --prompt-tokens 512 --decode-tokens 32 (decode after a 16-token prompt).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 bins=build/release/plimsoll isas="avx2 avx512" threads=2
while getopts "r:b:i:t:" opt; do
  case "$opt" in
    r) rounds=$OPTARG ;;
    b) bins=$OPTARG ;;
    i) isas=$OPTARG ;;
    t) threads=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: bench/isa_rounds.sh [-r N] [-b BINS] [-i ISAS] [-t THREADS] FILE..." >&2; exit 2; }
printf 'round\tbinary\tisa\tfile\tprefill_tps\tdecode_b1_tps\n'
for ((r = 1; r <= rounds; r++)); do
  for bin in $bins; do
    for isa in $isas; do
      for file in "$@"; do
        out=$(PLIMSOLL_ISA=$isa "$bin" bench -m "$file" --batch 1 --prompt-tokens 512 --decode-tokens 32 \
          --threads "$threads" 2>&1)
        prefill=$(sed -n 's/^prefill [0-9]* tokens: \([0-9.]*\) tokens\/s.*/\1/p' <<<"$out")
        decode=$(sed -n 's/^decode batch 1: \([0-9.]*\) tokens\/s.*/\1/p' <<<"$out")
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$bin" "$isa" "$(basename "$file" .gguf)" "${prefill:-?}" "${decode:-?}"
      done
    done
  done
done
