#!/usr/bin/env bash
# Builds and runs the kernel micro-benchmark (bench/kernels_bench.cpp) against the
# kernels of a source tree (default: this repo), e.g. to compare two commits:
#   bench/kernels_bench.sh [--src DIR] [--out BIN] [benchmark flags, e.g. --benchmark_filter=...]
# Needs Debian's libbenchmark-dev (scripts/install-deps). Not part of the test run.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD/src; out=build/kernels_bench
while [ $# -gt 0 ]; do
  case "$1" in
    --src) src=$2/src; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) break ;;
  esac
done
obj=$(mktemp -d); trap 'rm -rf "$obj"' EXIT
flags=(-std=c++20 -O3 -DNDEBUG -I"$src")
avx512=(-mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni)
objs=()
for f in "$src"/kernels/*.cpp "$src"/kernels/scalar/*.cpp "$src"/kernels/x86/*.cpp \
         "$src"/core/dtype.cpp "$src"/core/tensor.cpp "$src"/core/thread_pool.cpp; do
  [ "$(basename "$f")" = no_x86.cpp ] && continue
  extra=()
  case "$f" in
    */matmul_avx2.cpp|*/panels_avx2.cpp|*/panels_kquants_avx2.cpp|*/ops_avx2.cpp) extra=(-mavx2 -mfma -mf16c) ;;
    */matmul_avxvnni.cpp|*/panels_avxvnni.cpp|*/panels_kquants_avxvnni.cpp) extra=(-mavx2 -mfma -mf16c -mavxvnni) ;;
    */tiles_amx*.cpp) extra=("${avx512[@]}" -mavx512bf16 -mamx-tile -mamx-int8 -mamx-bf16) ;;
    */x86/*.cpp) extra=("${avx512[@]}") ;;
  esac
  o=$obj/$(echo "${f#"$src"/}" | tr / _).o
  g++ "${flags[@]}" "${extra[@]}" -c "$f" -o "$o" &
  objs+=("$o")
  [ "$(jobs -r | wc -l)" -ge 2 ] && wait -n
done
wait
mkdir -p "$(dirname "$out")"
g++ "${flags[@]}" bench/kernels_bench.cpp "${objs[@]}" -o "$out" -lbenchmark -lpthread
[ "${NO_RUN:-0}" = 1 ] || "$out" "$@"
