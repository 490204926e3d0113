// The CPU feature check (once per process) and the kernel table of each ISA
// level (isa_table.h): the one place that knows which kernels each level runs.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

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
#include "kernels/kernel_rows.h"

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

// ---- each level's CPU check (its row in kLevels below) ----
bool has_scalar() { return true; }

#if defined(__x86_64__) || defined(__i386__)
bool has_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
bool has_avx2_vnni() { return has_avx2() && avx_vnni(); }
bool has_avx512() {
  return has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}
#else
bool has_avx2() { return false; }
bool has_avx2_vnni() { return false; }
bool has_avx512() { return false; }
#endif
bool has_amx() { return has_avx512() && amx_usable(); }

#if defined(__aarch64__)
bool has_neon() { return true; }  // Advanced SIMD is part of the AArch64 baseline
#else
bool has_neon() { return false; }
#endif
#if defined(__aarch64__) && defined(__linux__)
bool has_neon_dot() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }
bool has_neon_i8mm() { return has_neon_dot() && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0; }
#else
bool has_neon_dot() { return false; }
bool has_neon_i8mm() { return false; }
#endif

IsaTable scalar_table() {
  IsaTable t;
  t.rows = &scalar_row_kernels();
  add_gemvs(&t, Isa::kScalar);
  t.vec = {dot_f32_scalar, axpy_f32_scalar, swiglu_scalar, sum_exp_scalar, f32_to_f16_row_scalar, attend_scalar,
           attend_causal_scalar};
  return t;
}

#if defined(__x86_64__) || defined(__i386__)
IsaTable avx2_table() {
  IsaTable t;
  t.rows = &avx2_row_kernels();
  add_panels(&t, Isa::kAvx2, avx2_panel_kernels(), avx2_panel_range);
  add_gemvs(&t, Isa::kAvx2);
  t.quantize_q8_0 = avx2_quantize_q8_0;
  t.quantize_q8_k = avx2_quantize_q8_k;
  t.vec = avx2_vec_kernels();
  return t;
}

// AVX2 with AVX-VNNI's integer dots in the row kernels and the Q8_0 / Q4_0 panels.
IsaTable avx2_vnni_table() {
  IsaTable t = avx2_table();
  t.rows = &avx2_vnni_row_kernels();
  t.kernel_rows.clear();
  add_panels(&t, Isa::kAvx2Vnni, avx2_vnni_panel_kernels(), avx2_vnni_panel_range);
  add_gemvs(&t, Isa::kAvx2Vnni);
  return t;
}

IsaTable avx512_table() {
  IsaTable t;
  t.rows = &avx512_row_kernels();
  add_panels(&t, Isa::kAvx512, avx512_panel_kernels(), avx512_float_panel_range);
  add_panels(&t, Isa::kAvx512, avx512_ymm_panel_kernels(), avx512_ymm_panel_range);
  add_gemvs(&t, Isa::kAvx512);
  add_tiles(&t, Isa::kAvx512, avx512_tile_kernels(), avx512_tile_range);
  t.quantize_q8_0 = avx2_quantize_q8_0;  // an AVX-512 CPU has AVX2
  t.quantize_q8_k = avx2_quantize_q8_k;
  t.vec = avx512_vec_kernels();
  return t;
}

// AVX-512 plus AMX-INT8 (and AMX-BF16 where usable) panels ahead of its broadcast kernels.
IsaTable amx_table() {
  IsaTable t = avx512_table();
  t.rows = &amx_row_kernels();
  t.kernel_rows.clear();  // no ymm panels: AMX-INT8 takes those batches
  add_panels(&t, Isa::kAmx, amx_kernels(), amx_int8_range);
  if (amx_bf16_usable()) add_panels(&t, Isa::kAmx, amx_bf16_kernels(), amx_bf16_range);
  add_panels(&t, Isa::kAmx, avx512_panel_kernels(), avx512_float_panel_range);
  add_gemvs(&t, Isa::kAmx);
  add_tiles(&t, Isa::kAmx, amx_tile_kernels(), any_batch);
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
  add_panels(&t, Isa::kNeon, neon_panel_kernels(), neon_panel_range);
  add_gemvs(&t, Isa::kNeon);
  t.vec = neon_vec_kernels();
  return t;
}

IsaTable neon_dot_table() {
  IsaTable t = neon_table();
  t.rows = &neon_dot_row_kernels();
  t.kernel_rows.clear();
  add_panels(&t, Isa::kNeonDot, neon_dot_panel_kernels(), neon_panel_range);
  add_gemvs(&t, Isa::kNeonDot);
  return t;
}

IsaTable neon_i8mm_table() {
  IsaTable t = neon_dot_table();
  t.kernel_rows.clear();
  add_panels(&t, Isa::kNeonI8mm, neon_i8mm_panel_kernels(), neon_panel_range);
  add_gemvs(&t, Isa::kNeonI8mm);
  return t;
}
#else
IsaTable neon_table() { return scalar_table(); }
IsaTable neon_dot_table() { return scalar_table(); }
IsaTable neon_i8mm_table() { return scalar_table(); }
#endif

// The ISA levels, best first: the one list of them (names, CPU checks, tables).
struct IsaLevel {
  Isa isa;
  const char* name;  // as PLIMSOLL_ISA spells it
  bool (*detect)();
  IsaTable (*table)();
};
constexpr IsaLevel kLevels[] = {
    {Isa::kAmx, "amx", has_amx, amx_table},
    {Isa::kAvx512, "avx512", has_avx512, avx512_table},
    {Isa::kAvx2Vnni, "avx2-vnni", has_avx2_vnni, avx2_vnni_table},
    {Isa::kAvx2, "avx2", has_avx2, avx2_table},
    {Isa::kNeonI8mm, "neon-i8mm", has_neon_i8mm, neon_i8mm_table},
    {Isa::kNeonDot, "neon-dotprod", has_neon_dot, neon_dot_table},
    {Isa::kNeon, "neon", has_neon, neon_table},
    {Isa::kScalar, "scalar", has_scalar, scalar_table},
};
constexpr size_t kNumLevels = std::size(kLevels);

const IsaLevel& level(Isa isa) {
  for (const IsaLevel& l : kLevels) {
    if (l.isa == isa) return l;
  }
  return kLevels[kNumLevels - 1];
}

// PLIMSOLL_ISA's level if it names one this CPU has; an error naming the levels it has otherwise.
Result<Isa> isa_from_name(const char* name) {
  std::string have;
  for (const IsaLevel& l : kLevels) {
    if (!l.detect()) continue;
    if (std::strcmp(name, l.name) == 0) return l.isa;
    have += have.empty() ? "" : ", ";
    have += l.name;
  }
  const bool known = std::any_of(std::begin(kLevels), std::end(kLevels),
                                 [name](const IsaLevel& l) { return std::strcmp(name, l.name) == 0; });
  return make_error(ErrorCode::kInvalidArgument, std::string("PLIMSOLL_ISA=") + name +
                                                     (known ? ": this CPU lacks that level" : ": no such ISA level") +
                                                     "; this CPU has: " + have);
}

// The environment's PLIMSOLL_ISA where valid (isa_env_status reports it otherwise), else the best level.
Isa best_isa() {
  if (const char* env = std::getenv("PLIMSOLL_ISA")) {
    if (Result<Isa> isa = isa_from_name(env)) return *isa;
  }
  for (const IsaLevel& l : kLevels) {
    if (l.detect()) return l.isa;
  }
  return Isa::kScalar;
}

std::atomic<Isa>& current_isa() {
  static std::atomic<Isa> isa{best_isa()};
  return isa;
}

// Each level's table, built on first use: only for a level set_isa accepted (the
// ISA-flagged files may use their instructions even to fill a table).
template <size_t I>
const IsaTable& built_table() {
  static const IsaTable t = kLevels[I].table();
  return t;
}
template <size_t... I>
constexpr std::array<const IsaTable& (*)(), sizeof...(I)> table_getters(std::index_sequence<I...>) {
  return {built_table<I>...};
}
constexpr auto kTableOf = table_getters(std::make_index_sequence<kNumLevels>());

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

const char* isa_name(Isa isa) { return level(isa).name; }

Status isa_env_status() {
  const char* env = std::getenv("PLIMSOLL_ISA");
  if (env == nullptr) return Status::ok_status();
  Result<Isa> isa = isa_from_name(env);
  if (!isa) return isa.error();
  return Status::ok_status();
}

std::vector<Isa> cpu_isas() {
  std::vector<Isa> isas;
  for (const IsaLevel& l : kLevels) {
    if (l.detect()) isas.push_back(l.isa);
  }
  return isas;
}

bool set_isa(Isa isa) {
  if (!level(isa).detect()) return false;
  current_isa().store(isa, std::memory_order_relaxed);
  return true;
}

const IsaTable& isa_table(Isa isa) {
  for (size_t i = 0; i < kNumLevels; ++i) {
    if (kLevels[i].isa == isa) return kTableOf[i]();
  }
  return kTableOf[kNumLevels - 1]();
}

const IsaTable& active_table() { return isa_table(active_isa()); }

}  // namespace plimsoll::kernels
