// AVX2 + AVX-VNNI K-quant panel kernels: panels_kquants_avx2.cpp built with
// -mavxvnni (each step one vpdpbusd); add_avx2_vnni_kquant_panels().
#if !defined(__AVXVNNI__)
#error "build with -mavxvnni"
#endif
#include "kernels/x86/panels_kquants_avx2.cpp"
