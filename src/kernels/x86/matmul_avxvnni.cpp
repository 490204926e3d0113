// AVX2 + AVX-VNNI row kernels: matmul_avx2.cpp built with -mavxvnni (its integer
// dots become vpdpbusd / vpdpwssd); avx2_vnni_row_kernels().
#if !defined(__AVXVNNI__)
#error "build with -mavxvnni"
#endif
#include "kernels/x86/matmul_avx2.cpp"
