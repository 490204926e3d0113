// AVX-512 VNNI + VL K-quant panel kernels: panels_kquants_avx2.cpp built with the AVX-512
// flags (each step the EVEX 256-bit vpdpbusd); add_avx512_ymm_kquant_panels().
#if !defined(__AVX512VNNI__) || !defined(__AVX512VL__)
#error "build with -mavx512vnni -mavx512vl"
#endif
#include "kernels/x86/panels_kquants_avx2.cpp"
