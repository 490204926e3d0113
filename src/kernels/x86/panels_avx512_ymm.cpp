// AVX-512 VNNI + VL panel kernels for Q8_0 / Q4_0 batches: panels_avx2.cpp built with
// the AVX-512 flags (each step the EVEX 256-bit vpdpbusd); avx512_ymm_panel_kernels().
#if !defined(__AVX512VNNI__) || !defined(__AVX512VL__)
#error "build with -mavx512vnni -mavx512vl"
#endif
#include "kernels/x86/panels_avx2.cpp"
