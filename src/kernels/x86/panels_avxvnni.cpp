// AVX2 + AVX-VNNI panel kernels: panels_avx2.cpp built with -mavxvnni (each Q8_0 /
// Q4_0 step one vpdpbusd); avx2_vnni_panel_kernels().
#if !defined(__AVXVNNI__)
#error "build with -mavxvnni"
#endif
#include "kernels/x86/panels_avx2.cpp"
