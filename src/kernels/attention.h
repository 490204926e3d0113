// Attention over a paged KV cache: one query position (kernels::attend), or a
// run of consecutive positions of one sequence (kernels::attend_causal).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace plimsoll::kernels {

// One KV head of one layer, as a sequence's blocks hold it. Keys and values
// are f32 or f16 (`dtype`); strides count elements of that dtype.
struct PagedKv {
  const void* keys = nullptr;    // the head's keys in block 0 of the arena
  const void* values = nullptr;  // likewise values
  DType dtype = DType::kF32;     // kF32 or kF16
  const int32_t* blocks = nullptr;  // the sequence's block ids, in position order
  int64_t block_stride = 0;  // elements from block i to block i + 1
  int64_t block_tokens = 0;  // positions per block
  int64_t pos_stride = 0;    // elements from one position to the next inside a block
};

// Attention for the `group` query heads that share one KV head, over cached
// positions 0..n_pos-1 (position p: block blocks[p / block_tokens], row p % block_tokens):
//   q: [group, head_dim]; out: [group, head_dim]
//   score(g, p) = dot(q_g, k_p) * scale + (slopes ? slopes[g] * p : 0)
//   out_g = sum_p softmax_p(score(g, .)) v_p
// One pass with an online softmax. The AVX-512 path (head_dim a multiple of 16,
// at most 512) takes 16 positions at a time with a polynomial exp; for a group
// of heads it transposes each chunk's keys once, scores up to 8 heads by
// broadcast FMAs and loads each value row once for them. The scalar twin goes
// position by position with std::exp.
void attend(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
            const float* slopes, float* out);
void attend_scalar(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos,
                   float scale, const float* slopes, float* out);

// attend_scalar over positions first_pos..n_pos-1 only (a sliding window:
// older positions are masked), with the scores soft-capped when softcap > 0:
// score(g, p) = softcap * tanh(dot(q_g, k_p) * scale / softcap) (Gemma 2). No
// ALiBi. Scalar, position by position: the engine calls it only for the layers
// and positions that need it (a window shorter than the context, soft-capping).
void attend_window_scalar(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t first_pos,
                          int64_t n_pos, float scale, float softcap, float* out);

// One query head at n_q consecutive positions of a sequence (a prefill run):
// row i (q + i * q_stride, head_dim floats) is position first_pos + i and sees
// positions 0..first_pos + i, so out + i * out_stride is exactly attend(row i,
// group 1, n_pos = first_pos + i + 1, slopes = slope). The AVX-512 path reads
// each 16-position chunk once per 16 rows (keys transposed once, scored by
// broadcast FMAs); the scalar twin calls attend_scalar row by row.
void attend_causal(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                   int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride);
void attend_causal_scalar(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                          int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride);

}  // namespace plimsoll::kernels
