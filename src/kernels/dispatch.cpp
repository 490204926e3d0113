// The CPU feature check (once per process) and the kernel table of each ISA
// level (isa_table.h): the one place that knows which kernels each level runs.
#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif

#include "kernels/isa_table.h"

namespace plimsoll::kernels {
namespace {

// AMX-TILE + AMX-INT8 in CPUID, tile state enabled by the OS (XCR0 bits 17, 18),
// and (Linux) the process's permission to use tile data, asked for here once.
bool amx_usable() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    if ((d & (1u << 24)) == 0 || (d & (1u << 25)) == 0) return false;  // AMX-TILE, AMX-INT8
    if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & (1u << 27)) == 0) return false;  // OSXSAVE
    uint32_t xcr0_lo = 0, xcr0_hi = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & (3u << 17)) != (3u << 17)) return false;  // XTILECFG, XTILEDATA
    constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
    unsigned long permitted = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0) return false;
    return (permitted & (1ul << kXfeatureXtiledata)) != 0;
  }();
  return usable;
#else
  return false;
#endif
}

#if defined(__x86_64__) || defined(__i386__)
// AVX-VNNI (the VEX-encoded vpdpbusd / vpdpwssd): CPUID leaf 7 subleaf 1, EAX bit 4.
bool avx_vnni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 4)) != 0;
}
#endif

bool cpu_has(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2:
#if defined(__x86_64__) || defined(__i386__)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
#else
      return false;
#endif
    case Isa::kAvx2Vnni:
#if defined(__x86_64__) || defined(__i386__)
      return cpu_has(Isa::kAvx2) && avx_vnni();
#else
      return false;
#endif
    case Isa::kAvx512:
#if defined(__x86_64__) || defined(__i386__)
      return cpu_has(Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512vnni");
#else
      return false;
#endif
    case Isa::kAmx: return cpu_has(Isa::kAvx512) && amx_usable();
    case Isa::kNeon:
#if defined(__aarch64__)
      return true;  // Advanced SIMD is part of the AArch64 baseline
#else
      return false;
#endif
    case Isa::kNeonDot:
#if defined(__aarch64__) && defined(__linux__)
      return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
      return false;
#endif
    case Isa::kNeonI8mm:
#if defined(__aarch64__) && defined(__linux__)
      return cpu_has(Isa::kNeonDot) && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
#else
      return false;
#endif
  }
  return false;
}

Isa best_isa() {
  if (const char* env = std::getenv("PLIMSOLL_ISA")) {
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAmx, Isa::kNeon, Isa::kNeonDot,
                    Isa::kNeonI8mm}) {
      if (std::strcmp(env, isa_name(isa)) == 0 && cpu_has(isa)) return isa;
    }
  }
  if (cpu_has(Isa::kAmx)) return Isa::kAmx;
  if (cpu_has(Isa::kAvx512)) return Isa::kAvx512;
  if (cpu_has(Isa::kAvx2Vnni)) return Isa::kAvx2Vnni;
  if (cpu_has(Isa::kAvx2)) return Isa::kAvx2;
  if (cpu_has(Isa::kNeonI8mm)) return Isa::kNeonI8mm;
  if (cpu_has(Isa::kNeonDot)) return Isa::kNeonDot;
  if (cpu_has(Isa::kNeon)) return Isa::kNeon;
  return Isa::kScalar;
}

std::atomic<Isa>& current_isa() {
  static std::atomic<Isa> isa{best_isa()};
  return isa;
}

IsaTable scalar_table() {
  IsaTable t;
  t.rows = &scalar_row_kernels();
  t.dot_f32 = dot_f32_scalar;
  t.axpy_f32 = axpy_f32_scalar;
  t.swiglu = swiglu_scalar;
  t.sum_exp = sum_exp_scalar;
  t.f32_to_f16_row = f32_to_f16_row_scalar;
  t.attend = attend_scalar;
  t.attend_causal = attend_causal_scalar;
  return t;
}

#if defined(__x86_64__) || defined(__i386__)
// AVX-512 attention takes head_dim % 16 == 0, <= 512; other heads run the scalar twin.
bool avx512_fits(int64_t head_dim) { return head_dim % 16 == 0 && head_dim <= 512; }

void attend_avx512(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                   const float* slopes, float* out) {
  if (!avx512_fits(head_dim)) return attend_scalar(q, group, head_dim, kv, n_pos, scale, slopes, out);
  avx512_attend(q, group, head_dim, kv, n_pos, scale, slopes, out);
}

void attend_causal_avx512(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                          int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride) {
  if (!avx512_fits(head_dim)) {
    return attend_causal_scalar(q, q_stride, n_q, head_dim, kv, first_pos, scale, slope, out, out_stride);
  }
  avx512_attend_causal(q, q_stride, n_q, head_dim, kv, first_pos, scale, slope ? *slope : 0.0f, out, out_stride);
}

IsaTable avx2_table() {
  IsaTable t;
  t.rows = &avx2_row_kernels();
  t.panels[0] = &avx2_panel_kernels();
  t.quantize_q8_0 = avx2_quantize_q8_0;
  t.quantize_q8_k = avx2_quantize_q8_k;
  t.dot_f32 = avx2_dot_f32;
  t.axpy_f32 = avx2_axpy_f32;
  t.swiglu = avx2_swiglu;
  t.sum_exp = avx2_sum_exp;
  t.f32_to_f16_row = avx2_f32_to_f16_row;
  t.attend = avx2_attend;
  t.attend_causal = avx2_attend_causal;
  return t;
}

// AVX2 with AVX-VNNI's integer dots in the row kernels and the Q8_0 / Q4_0 panels.
IsaTable avx2_vnni_table() {
  IsaTable t = avx2_table();
  t.rows = &avx2_vnni_row_kernels();
  t.panels[0] = &avx2_vnni_panel_kernels();
  return t;
}

IsaTable avx512_table() {
  IsaTable t;
  t.rows = &avx512_row_kernels();
  t.tiles = &avx512_tile_kernels();
  t.panels[0] = &avx512_panel_kernels();      // F32 / F16 / BF16
  t.panels[1] = &avx512_ymm_panel_kernels();  // Q8_0 / Q4_0 batches (the AMX table replaces both)
  t.quantize_q8_0 = avx2_quantize_q8_0;  // an AVX-512 CPU has AVX2
  t.quantize_q8_k = avx2_quantize_q8_k;
  t.dot_f32 = avx512_dot_f32;
  t.axpy_f32 = avx512_axpy_f32;
  t.swiglu = avx512_swiglu;
  t.sum_exp = avx512_sum_exp;
  t.f32_to_f16_row = avx512_f32_to_f16_row;
  t.attend = attend_avx512;
  t.attend_causal = attend_causal_avx512;
  return t;
}

// AVX-512 plus AMX-INT8 (and AMX-BF16 where usable) panels ahead of its broadcast kernels.
IsaTable amx_table() {
  IsaTable t = avx512_table();
  t.rows = &amx_row_kernels();
  t.tiles = &amx_tile_kernels();
  t.panels[0] = &amx_kernels();
  t.panels[1] = amx_bf16_usable() ? &amx_bf16_kernels() : nullptr;
  t.panels[2] = &avx512_panel_kernels();
  return t;
}
#else
IsaTable avx2_table() { return scalar_table(); }
IsaTable avx2_vnni_table() { return scalar_table(); }
IsaTable avx512_table() { return scalar_table(); }
IsaTable amx_table() { return scalar_table(); }
#endif

#if defined(__aarch64__)
// NEON: its row kernels, panels for Q8_0/Q4_0 and float weights, ops and attention;
// NEON + dotprod: the same with SDOT in the integer dots; NEON + i8mm: dotprod's with
// SMMLA panels for Q8_0/Q4_0 batches.
IsaTable neon_table() {
  IsaTable t;
  t.rows = &neon_row_kernels();
  t.panels[0] = &neon_panel_kernels();
  t.dot_f32 = neon_dot_f32;
  t.axpy_f32 = neon_axpy_f32;
  t.swiglu = neon_swiglu;
  t.sum_exp = neon_sum_exp;
  t.f32_to_f16_row = neon_f32_to_f16_row;
  t.attend = neon_attend;
  t.attend_causal = neon_attend_causal;
  return t;
}

IsaTable neon_dot_table() {
  IsaTable t = neon_table();
  t.rows = &neon_dot_row_kernels();
  t.panels[0] = &neon_dot_panel_kernels();
  return t;
}

IsaTable neon_i8mm_table() {
  IsaTable t = neon_dot_table();
  t.panels[0] = &neon_i8mm_panel_kernels();
  return t;
}
#else
IsaTable neon_table() { return scalar_table(); }
IsaTable neon_dot_table() { return scalar_table(); }
IsaTable neon_i8mm_table() { return scalar_table(); }
#endif

}  // namespace

// AMX-BF16 (TDPBF16PS) and AVX512-BF16 (the float kernels' conversions) on top of AMX-INT8's checks.
bool amx_bf16_usable() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!amx_usable() || __get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 || (d & (1u << 22)) == 0) return false;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 5)) != 0;
  }();
  return usable;
#else
  return false;
#endif
}

Isa active_isa() { return current_isa().load(std::memory_order_relaxed); }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx2Vnni: return "avx2-vnni";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
    case Isa::kNeon: return "neon";
    case Isa::kNeonDot: return "neon-dotprod";
    case Isa::kNeonI8mm: return "neon-i8mm";
  }
  return "unknown";
}

bool set_isa(Isa isa) {
  if (!cpu_has(isa)) return false;
  current_isa().store(isa, std::memory_order_relaxed);
  return true;
}

// Each table is built on first use, only for a level set_isa accepted (the
// ISA-flagged files may use their instructions even to fill a table).
const IsaTable& isa_table(Isa isa) {
  switch (isa) {
    case Isa::kAvx2: {
      static const IsaTable t = avx2_table();
      return t;
    }
    case Isa::kAvx2Vnni: {
      static const IsaTable t = avx2_vnni_table();
      return t;
    }
    case Isa::kAvx512: {
      static const IsaTable t = avx512_table();
      return t;
    }
    case Isa::kAmx: {
      static const IsaTable t = amx_table();
      return t;
    }
    case Isa::kNeon: {
      static const IsaTable t = neon_table();
      return t;
    }
    case Isa::kNeonDot: {
      static const IsaTable t = neon_dot_table();
      return t;
    }
    case Isa::kNeonI8mm: {
      static const IsaTable t = neon_i8mm_table();
      return t;
    }
    case Isa::kScalar: break;
  }
  static const IsaTable t = scalar_table();
  return t;
}

const IsaTable& active_table() { return isa_table(active_isa()); }

}  // namespace plimsoll::kernels
