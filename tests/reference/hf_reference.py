#!/usr/bin/env python3
# Builds tiny random Hugging Face checkpoints (GPT-2, BLOOM, Llama 2 and 3.x,
# SmolLM2, Mistral, Qwen2.5, Qwen3, Phi-3, Gemma 2, Gemma 3) with each one's exact config.json
# keys, the GGUF files of the Llama family and Gemma as llama.cpp's converter writes them,
# and their expected logits and greedy continuations, from the HF modeling formulas.
"""Usage: hf_reference.py OUT_DIR [--gguf-vocab]

Writes OUT_DIR/<arch>/{config.json, model.safetensors or shards + index,
generation_config.json, tokenizer_config.json, expected.json} and, for the
Llama family and Gemma (llama, llama3, mistral, qwen2, qwen3, smollm2, phi3, gemma2,
gemma3), OUT_DIR/<arch>.gguf; gemma3_types and mistral_window are folders only.
--gguf-vocab puts a placeholder vocabulary in the GGUF files (llama.cpp refuses a
file without one; bench/llama_cpp_oracle runs it on them).

The forward passes below are written from the Hugging Face modeling code
(modeling_gpt2.py, modeling_bloom.py, modeling_llama.py, modeling_mistral.py,
modeling_qwen2.py, modeling_qwen3.py, modeling_phi3.py, modeling_gemma2.py,
modeling_gemma3.py, masking_utils.py's sliding window, modeling_rope_utils.py),
one formula at a time, and run in float64 on the weights as stored (the f16 /
bf16 checkpoints are rounded first), so they are an independent oracle for
Plimsoll's f32 forward passes.
"""
import json
import math
import os
import sys

import torch

import gguf_file  # tests/reference/, beside this file
import safetensors_file

N_NEW = 6  # greedy tokens after each prompt
ARCHS = ["gpt2", "bloom", "llama", "qwen2", "llama3", "mistral", "qwen3", "smollm2", "phi3", "gemma2", "gemma3",
         "gemma3_types", "mistral_window"]
GGUF_VOCAB = False  # --gguf-vocab
PROMPTS = [[1], [5, 17, 3], [2, 9, 44, 7, 81, 13, 60, 21, 30, 99, 4], list(range(3, 40, 2))]

# ---- safetensors writer -------------------------------------------------------

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    """tensors: dict name -> torch tensor (F32/F16/BF16)."""
    safetensors_file.write_safetensors(
        path, [(name, DTYPES[t.dtype], t.shape, tensor_bytes(t)) for name, t in tensors.items()],
        metadata={"format": "pt"})


def write_sharded(folder, tensors, n_shards):
    names = list(tensors)
    per = (len(names) + n_shards - 1) // n_shards
    weight_map = {}
    for s in range(n_shards):
        file = f"model-{s + 1:05d}-of-{n_shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[s * per:(s + 1) * per]}
        write_safetensors(os.path.join(folder, file), part)
        weight_map.update({n: file for n in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=1)


# ---- shared formulas ----------------------------------------------------------

def layer_norm(x, w, b, eps):  # torch.nn.LayerNorm: biased variance
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):  # LlamaRMSNorm
    var = (x * x).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def gelu_new(x):  # GPT-2's NewGELUActivation; BLOOM's bloom_gelu_forward is the same formula
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def causal_attention(q, k, v, bias=None, window=None):
    """q [H, T, hd], k/v [H, T, hd]; bias [H, 1, T] added to the scores; window:
    masking_utils' sliding_window_overlay (key j visible from query i iff j > i - window)."""
    hd = q.shape[-1]
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
    if bias is not None:
        scores = scores + bias
    t = q.shape[1]
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    if window:
        mask = mask | torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=-window)
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def heads(x, n):  # [T, n * hd] -> [n, T, hd]
    return x.view(x.shape[0], n, -1).transpose(0, 1)


def merge(x):  # [H, T, hd] -> [T, H * hd]
    return x.transpose(0, 1).reshape(x.shape[1], -1)


def f64(w):
    return {k: v.to(torch.float64) for k, v in w.items()}


# ---- GPT-2 --------------------------------------------------------------------

def gpt2_forward(cfg, w, ids):
    d, nh, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    t = torch.tensor(ids)
    h = w["wte.weight"][t] + w["wpe.weight"][torch.arange(len(ids))]
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        a = layer_norm(h, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]  # Conv1D: x W + b
        q, k, v = qkv.split(d, dim=-1)
        o = merge(causal_attention(heads(q, nh), heads(k, nh), heads(v, nh)))
        h = h + o @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        m = layer_norm(h, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        m = gelu_new(m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        h = h + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    h = layer_norm(h, w["ln_f.weight"], w["ln_f.bias"], eps)
    return h @ w["wte.weight"].T


def gpt2_model(gen):
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 32, "n_layer": 2,
           "n_head": 4, "n_inner": None, "n_positions": 64, "vocab_size": 101,
           "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    d, f, v = 32, 128, 101
    w = {"wte.weight": rnd(gen, v, d), "wpe.weight": rnd(gen, 64, d, scale=0.3),
         "ln_f.weight": 1 + rnd(gen, d, scale=0.1), "ln_f.bias": rnd(gen, d, scale=0.1)}
    for l in range(2):
        p = f"h.{l}."
        w.update({p + "ln_1.weight": 1 + rnd(gen, d, scale=0.1), p + "ln_1.bias": rnd(gen, d, scale=0.1),
                  p + "attn.c_attn.weight": rnd(gen, d, 3 * d), p + "attn.c_attn.bias": rnd(gen, 3 * d, scale=0.1),
                  p + "attn.c_proj.weight": rnd(gen, d, d), p + "attn.c_proj.bias": rnd(gen, d, scale=0.1),
                  p + "ln_2.weight": 1 + rnd(gen, d, scale=0.1), p + "ln_2.bias": rnd(gen, d, scale=0.1),
                  p + "mlp.c_fc.weight": rnd(gen, d, f), p + "mlp.c_fc.bias": rnd(gen, f, scale=0.1),
                  p + "mlp.c_proj.weight": rnd(gen, f, d), p + "mlp.c_proj.bias": rnd(gen, d, scale=0.1)})
    # GPT2LMHeadModel checkpoints prefix "transformer."; stored in f16 to test widening.
    stored = {"transformer." + k: t.to(torch.float16) for k, t in w.items()}
    stored["transformer.h.0.attn.bias"] = torch.ones(1, 1, 4, 4)  # the causal-mask buffer
    return cfg, stored, lambda ids: gpt2_forward(cfg, f64(w16(w, torch.float16)), ids)


# ---- BLOOM --------------------------------------------------------------------

def alibi_slopes(n_heads):  # build_alibi_tensor's slopes
    closest = 2 ** math.floor(math.log2(n_heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, 1 + closest)]
    if closest != n_heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        remaining = min(closest, n_heads - closest)
        slopes += [extra ** p for p in range(1, 1 + 2 * remaining, 2)]
    return torch.tensor(slopes, dtype=torch.float64)


def bloom_forward(cfg, w, ids):
    d, nh, eps = cfg["hidden_size"], cfg["n_head"], cfg["layer_norm_epsilon"]
    hd, t = d // nh, len(ids)
    alibi = alibi_slopes(nh)[:, None, None] * torch.arange(t, dtype=torch.float64)[None, None, :]
    h = w["word_embeddings.weight"][torch.tensor(ids)]
    h = layer_norm(h, w["word_embeddings_layernorm.weight"], w["word_embeddings_layernorm.bias"], eps)
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        a = layer_norm(h, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
        fused = a @ w[p + "self_attention.query_key_value.weight"].T + w[p + "self_attention.query_key_value.bias"]
        fused = fused.view(t, nh, 3, hd)  # _split_heads: per head [q, k, v]
        q, k, v = (fused[:, :, j, :].transpose(0, 1) for j in range(3))
        o = merge(causal_attention(q, k, v, alibi))
        h = h + o @ w[p + "self_attention.dense.weight"].T + w[p + "self_attention.dense.bias"]
        m = layer_norm(h, w[p + "post_attention_layernorm.weight"], w[p + "post_attention_layernorm.bias"], eps)
        m = gelu_new(m @ w[p + "mlp.dense_h_to_4h.weight"].T + w[p + "mlp.dense_h_to_4h.bias"])
        h = h + m @ w[p + "mlp.dense_4h_to_h.weight"].T + w[p + "mlp.dense_4h_to_h.bias"]
    h = layer_norm(h, w["ln_f.weight"], w["ln_f.bias"], eps)
    return h @ w["word_embeddings.weight"].T


def bloom_model(gen):
    d, nh, v = 48, 6, 100  # 6 heads: not a power of two, so the extra ALiBi slopes are used
    cfg = {"model_type": "bloom", "architectures": ["BloomForCausalLM"], "hidden_size": d, "n_layer": 2,
           "n_head": nh, "vocab_size": v, "layer_norm_epsilon": 1e-5,
           "apply_residual_connection_post_layernorm": False}
    w = {"word_embeddings.weight": rnd(gen, v, d),
         "word_embeddings_layernorm.weight": 1 + rnd(gen, d, scale=0.1),
         "word_embeddings_layernorm.bias": rnd(gen, d, scale=0.1),
         "ln_f.weight": 1 + rnd(gen, d, scale=0.1), "ln_f.bias": rnd(gen, d, scale=0.1)}
    for l in range(2):
        p = f"h.{l}."
        w.update({p + "input_layernorm.weight": 1 + rnd(gen, d, scale=0.1),
                  p + "input_layernorm.bias": rnd(gen, d, scale=0.1),
                  p + "self_attention.query_key_value.weight": rnd(gen, 3 * d, d),
                  p + "self_attention.query_key_value.bias": rnd(gen, 3 * d, scale=0.1),
                  p + "self_attention.dense.weight": rnd(gen, d, d),
                  p + "self_attention.dense.bias": rnd(gen, d, scale=0.1),
                  p + "post_attention_layernorm.weight": 1 + rnd(gen, d, scale=0.1),
                  p + "post_attention_layernorm.bias": rnd(gen, d, scale=0.1),
                  p + "mlp.dense_h_to_4h.weight": rnd(gen, 4 * d, d),
                  p + "mlp.dense_h_to_4h.bias": rnd(gen, 4 * d, scale=0.1),
                  p + "mlp.dense_4h_to_h.weight": rnd(gen, d, 4 * d),
                  p + "mlp.dense_4h_to_h.bias": rnd(gen, d, scale=0.1)})
    return cfg, dict(w), lambda ids: bloom_forward(cfg, f64(w), ids)  # BloomModel names: no prefix


# ---- Llama family: Llama 2 / 3.x, Mistral, Qwen2 / 2.5, Qwen3 ----------------

def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def inv_freqs(cfg, hd):
    """_compute_default_rope_parameters, or _compute_llama3_parameters when
    rope_scaling's rope_type is llama3 (modeling_rope_utils.py)."""
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    scaling = cfg.get("rope_scaling")
    if not scaling or scaling.get("rope_type", scaling.get("type")) != "llama3":
        return inv_freq
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context_len / low, old_context_len / high
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low) / (high - low)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def rope(x, inv_freq):  # x [H, T, hd]: LlamaRotaryEmbedding + apply_rotary_pos_emb
    t = x.shape[1]
    freqs = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def llama_forward(cfg, w, ids, qkv_bias):
    nh, nkv, eps = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["rms_norm_eps"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // nh
    inv_freq = inv_freqs(cfg, hd)
    qk_norm = cfg["model_type"] == "qwen3"  # Qwen3Attention's q_norm / k_norm over head_dim
    h = w["model.embed_tokens.weight"][torch.tensor(ids)]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        proj = {}
        if p + "self_attn.qkv_proj.weight" in w:  # Phi3Attention: one qkv_proj, rows [q; k; v]
            qkv = a @ w[p + "self_attn.qkv_proj.weight"].T
            nq, nk = nh * hd, nkv * hd
            proj = {"q": qkv[..., :nq], "k": qkv[..., nq:nq + nk], "v": qkv[..., nq + nk:]}
        for n in "qkv" if not proj else "":
            proj[n] = a @ w[p + f"self_attn.{n}_proj.weight"].T
            if qkv_bias:
                proj[n] = proj[n] + w[p + f"self_attn.{n}_proj.bias"]
        q, k, v = heads(proj["q"], nh), heads(proj["k"], nkv), heads(proj["v"], nkv)
        if qk_norm:
            q, k = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps), rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = rope(q, inv_freq), rope(k, inv_freq)
        k, v = k.repeat_interleave(nh // nkv, dim=0), v.repeat_interleave(nh // nkv, dim=0)  # repeat_kv
        window = cfg.get("sliding_window") if cfg["model_type"] in ("mistral", "phi3") else None  # every layer
        h = h + merge(causal_attention(q, k, v, window=window)) @ w[p + "self_attn.o_proj.weight"].T
        m = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        if p + "mlp.gate_up_proj.weight" in w:  # Phi3MLP: gate, up = gate_up_proj(x).chunk(2, dim=-1)
            gate, up = (m @ w[p + "mlp.gate_up_proj.weight"].T).chunk(2, dim=-1)
        else:
            gate, up = m @ w[p + "mlp.gate_proj.weight"].T, m @ w[p + "mlp.up_proj.weight"].T
        m = (gate * torch.sigmoid(gate) * up) @ w[p + "mlp.down_proj.weight"].T
        h = h + m
    h = rms_norm(h, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return h @ head.T


def llama_weights(gen, d, kv, f, v, layers, qkv_bias, tied, q=None, head_dim=None):
    q = q or d
    w = {"model.embed_tokens.weight": rnd(gen, v, d), "model.norm.weight": 1 + rnd(gen, d, scale=0.1)}
    if not tied:
        w["lm_head.weight"] = rnd(gen, v, d)
    for l in range(layers):
        p = f"model.layers.{l}."
        w.update({p + "input_layernorm.weight": 1 + rnd(gen, d, scale=0.1),
                  p + "self_attn.q_proj.weight": rnd(gen, q, d), p + "self_attn.k_proj.weight": rnd(gen, kv, d),
                  p + "self_attn.v_proj.weight": rnd(gen, kv, d), p + "self_attn.o_proj.weight": rnd(gen, d, q),
                  p + "post_attention_layernorm.weight": 1 + rnd(gen, d, scale=0.1),
                  p + "mlp.gate_proj.weight": rnd(gen, f, d), p + "mlp.up_proj.weight": rnd(gen, f, d),
                  p + "mlp.down_proj.weight": rnd(gen, d, f)})
        if qkv_bias:
            w.update({p + "self_attn.q_proj.bias": rnd(gen, q, scale=0.3),
                      p + "self_attn.k_proj.bias": rnd(gen, kv, scale=0.3),
                      p + "self_attn.v_proj.bias": rnd(gen, kv, scale=0.3)})
        if head_dim:  # Qwen3's per-head norms
            w.update({p + "self_attn.q_norm.weight": 1 + rnd(gen, head_dim, scale=0.2),
                      p + "self_attn.k_norm.weight": 1 + rnd(gen, head_dim, scale=0.2)})
    return w


def llama_model(gen):  # Llama 2 keys; bf16 and sharded
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "intermediate_size": 64, "vocab_size": 103, "max_position_embeddings": 64,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
           "hidden_act": "silu", "rope_scaling": None}
    w = llama_weights(gen, 32, 16, 64, 103, 2, False, False)
    stored = {k: t.to(torch.bfloat16) for k, t in w.items()}  # bf16 and sharded
    return cfg, stored, lambda ids: llama_forward(cfg, f64(w16(w, torch.bfloat16)), ids, False)


def llama3_model(gen):  # Llama 3.2's config.json keys (tied head, explicit head_dim, llama3 rope scaling)
    # original_max_position_embeddings 256 puts the tiny head's 4 frequencies in all three
    # bands (kept, smoothed, divided by factor), so the scaling shows in the logits.
    cfg = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "bos_token_id": 1, "eos_token_id": [2, 3], "head_dim": 8, "hidden_act": "silu",
           "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
           "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
           "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
           "pretraining_tp": 1, "rms_norm_eps": 1e-05,
           "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                            "original_max_position_embeddings": 256, "rope_type": "llama3"},
           "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
           "transformers_version": "4.45.0.dev0", "use_cache": True, "vocab_size": 109}
    w = llama_weights(gen, 32, 16, 64, 109, 2, False, True)
    return cfg, dict(w), lambda ids: llama_forward(cfg, f64(w), ids, False)


def smollm2_model(gen):  # SmolLM2-135M's config.json keys: a tied Llama with its own defaults
    cfg = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 32,
           "initializer_range": 0.041666666666666664, "intermediate_size": 64, "is_llama_config": True,
           "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 4,
           "num_hidden_layers": 2, "num_key_value_heads": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
           "rope_interleaved": False, "rope_scaling": None, "rope_theta": 100000, "tie_word_embeddings": True,
           "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True, "vocab_size": 127}
    w = llama_weights(gen, 32, 16, 64, 127, 2, False, True)
    return cfg, dict(w), lambda ids: llama_forward(cfg, f64(w), ids, False)


def phi3_model(gen):  # Phi-3-mini-4k-instruct's config.json keys; fused qkv_proj and gate_up_proj
    cfg = {"architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "auto_map": {"AutoConfig": "configuration_phi3.Phi3Config"}, "bos_token_id": 1, "embd_pdrop": 0.0,
           "eos_token_id": 32000, "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02,
           "intermediate_size": 64, "max_position_embeddings": 4096, "model_type": "phi3",
           "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 4,
           "original_max_position_embeddings": 4096, "pad_token_id": 32000, "resid_pdrop": 0.0,
           "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0, "sliding_window": 2047,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.40.2",
           "use_cache": True, "vocab_size": 131}
    split = llama_weights(gen, 32, 32, 64, 131, 2, False, False)
    w = {}
    for k, t in split.items():  # fuse as Phi-3 stores them
        if ".self_attn.q_proj." in k:
            base = k.replace("q_proj", "qkv_proj")
            w[base] = torch.cat([t, split[k.replace("q_proj", "k_proj")], split[k.replace("q_proj", "v_proj")]])
        elif ".mlp.gate_proj." in k:
            w[k.replace("gate_proj", "gate_up_proj")] = torch.cat([t, split[k.replace("gate_proj", "up_proj")]])
        elif not any(s in k for s in (".self_attn.k_proj.", ".self_attn.v_proj.", ".mlp.up_proj.")):
            w[k] = t
    return cfg, dict(w), lambda ids: llama_forward(cfg, f64(w), ids, False)


def mistral_model(gen):  # Mistral-7B-v0.1's config.json keys (sliding window above the test's positions)
    cfg = {"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
           "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
           "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 4,
           "num_hidden_layers": 2, "num_key_value_heads": 1, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
           "sliding_window": 4096, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
           "transformers_version": "4.34.0.dev0", "use_cache": True, "vocab_size": 101}
    w = llama_weights(gen, 32, 8, 64, 101, 2, False, False)
    return cfg, dict(w), lambda ids: llama_forward(cfg, f64(w), ids, False)


def qwen2_model(gen):  # Qwen2.5-0.5B's config.json keys
    cfg = {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
           "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02,
           "intermediate_size": 64, "max_position_embeddings": 128, "max_window_layers": 24,
           "model_type": "qwen2", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
           "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
           "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True,
           "use_sliding_window": False, "vocab_size": 107}
    w = llama_weights(gen, 32, 16, 64, 107, 2, True, True)
    return cfg, dict(w), lambda ids: llama_forward(cfg, f64(w), ids, True)


def qwen3_model(gen):  # Qwen3-0.6B's config.json keys: head_dim 16 > hidden / heads, qk-norm
    cfg = {"architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 16, "hidden_act": "silu",
           "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
           "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
           "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
           "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": True,
           "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True,
           "use_sliding_window": False, "vocab_size": 113}
    w = llama_weights(gen, 32, 32, 64, 113, 2, False, True, q=64, head_dim=16)
    return cfg, dict(w), lambda ids: llama_forward(cfg, f64(w), ids, False)


# ---- Gemma 2 / Gemma 3 (modeling_gemma2.py, modeling_gemma3.py) ----------------

def gemma_rms_norm(x, w, eps):  # Gemma2RMSNorm / Gemma3RMSNorm: scaled by (1 + weight)
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * (1.0 + w)


def gemma_local_layers(cfg):
    """layer_types when the config has them, else Gemma2Config's every other layer
    / Gemma3TextConfig's sliding_window_pattern: sliding iff (i + 1) % pattern."""
    n = cfg["num_hidden_layers"]
    if cfg.get("layer_types"):
        return [t == "sliding_attention" for t in cfg["layer_types"]]
    pattern = 2 if cfg["model_type"] == "gemma2" else cfg.get("sliding_window_pattern", 6)
    return [bool((i + 1) % pattern) for i in range(n)]


def gemma_attention(q, k, v, scaling, softcap, window):
    """eager_attention_forward: scores * scaling, tanh soft-capping, then the causal
    (and sliding_window_overlay: kv_idx > q_idx - window) mask and softmax."""
    scores = q @ k.transpose(-1, -2) * scaling
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    t = q.shape[1]
    qi, ki = torch.arange(t)[:, None], torch.arange(t)[None, :]
    allowed = ki <= qi
    if window:
        allowed = allowed & (ki > qi - window)
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def gemma_forward(cfg, w, ids):
    nh, nkv, eps, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["rms_norm_eps"], cfg["head_dim"]
    gemma3 = cfg["model_type"] == "gemma3_text"
    local = gemma_local_layers(cfg)
    # Gemma*ScaledWordEmbedding / Gemma2Model: normalizer = tensor(hidden_size ** 0.5) in the weights' dtype (f32 here)
    scale = float(torch.tensor(cfg["hidden_size"] ** 0.5, dtype=torch.float32))
    h = w["model.embed_tokens.weight"][torch.tensor(ids)] * scale
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        theta = cfg["rope_local_base_freq"] if gemma3 and local[l] else cfg["rope_theta"]
        inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        scaling_cfg = cfg.get("rope_scaling")
        if gemma3 and not local[l] and scaling_cfg and scaling_cfg.get("rope_type") == "linear":
            inv_freq = inv_freq / scaling_cfg["factor"]  # _compute_linear_scaling_rope_parameters
        a = gemma_rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q = heads(a @ w[p + "self_attn.q_proj.weight"].T, nh)
        k = heads(a @ w[p + "self_attn.k_proj.weight"].T, nkv)
        v = heads(a @ w[p + "self_attn.v_proj.weight"].T, nkv)
        if gemma3:
            q = gemma_rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = gemma_rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = rope(q, inv_freq), rope(k, inv_freq)
        k, v = k.repeat_interleave(nh // nkv, dim=0), v.repeat_interleave(nh // nkv, dim=0)
        o = gemma_attention(q, k, v, cfg["query_pre_attn_scalar"] ** -0.5, cfg.get("attn_logit_softcapping"),
                            cfg["sliding_window"] if local[l] else None)
        o = merge(o) @ w[p + "self_attn.o_proj.weight"].T
        h = h + gemma_rms_norm(o, w[p + "post_attention_layernorm.weight"], eps)
        m = gemma_rms_norm(h, w[p + "pre_feedforward_layernorm.weight"], eps)
        m = (gelu_new(m @ w[p + "mlp.gate_proj.weight"].T) * (m @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        h = h + gemma_rms_norm(m, w[p + "post_feedforward_layernorm.weight"], eps)
    h = gemma_rms_norm(h, w["model.norm.weight"], eps)
    logits = h @ w["model.embed_tokens.weight"].T  # tied head
    cap = cfg.get("final_logit_softcapping")
    return torch.tanh(logits / cap) * cap if cap else logits


def gemma_weights(gen, d, q, kv, f, v, layers, head_dim, qk_norm):
    """Norm weights around 0: Gemma's norms scale by (1 + w)."""
    w = {"model.embed_tokens.weight": rnd(gen, v, d), "model.norm.weight": rnd(gen, d, scale=0.1)}
    for l in range(layers):
        p = f"model.layers.{l}."
        w.update({p + "input_layernorm.weight": rnd(gen, d, scale=0.1),
                  p + "self_attn.q_proj.weight": rnd(gen, q, d), p + "self_attn.k_proj.weight": rnd(gen, kv, d),
                  p + "self_attn.v_proj.weight": rnd(gen, kv, d), p + "self_attn.o_proj.weight": rnd(gen, d, q),
                  p + "post_attention_layernorm.weight": rnd(gen, d, scale=0.1),
                  p + "pre_feedforward_layernorm.weight": rnd(gen, d, scale=0.1),
                  p + "post_feedforward_layernorm.weight": rnd(gen, d, scale=0.1),
                  p + "mlp.gate_proj.weight": rnd(gen, f, d), p + "mlp.up_proj.weight": rnd(gen, f, d),
                  p + "mlp.down_proj.weight": rnd(gen, d, f)})
        if qk_norm:
            w.update({p + "self_attn.q_norm.weight": rnd(gen, head_dim, scale=0.2),
                      p + "self_attn.k_norm.weight": rnd(gen, head_dim, scale=0.2)})
    return w


def gemma2_model(gen):
    """gemma-2-2b's config.json keys; window 5 < the test's positions; soft-caps 3 and 10
    (50 and 30 in the real model) so that capping moves scores and logits; norms stored bf16."""
    cfg = {"architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "attn_logit_softcapping": 3.0, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1,
           "final_logit_softcapping": 10.0, "head_dim": 16, "hidden_act": "gelu_pytorch_tanh",
           "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 32, "initializer_range": 0.02,
           "intermediate_size": 64, "max_position_embeddings": 8192, "model_type": "gemma2",
           "num_attention_heads": 4, "num_hidden_layers": 4, "num_key_value_heads": 2, "pad_token_id": 0,
           "query_pre_attn_scalar": 16, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 5,
           "torch_dtype": "float32", "transformers_version": "4.42.4", "use_cache": True, "vocab_size": 131}
    w = gemma_weights(gen, 32, 64, 32, 64, 131, 4, 16, False)
    stored = {k: t.to(torch.bfloat16) if "norm" in k else t for k, t in w.items()}
    return cfg, stored, lambda ids: gemma_forward(cfg, f64(w16_norms(w)), ids)


def gemma3_model(gen):  # gemma-3-1b's config.json keys; 6 layers: five local (window 5), one global
    cfg = {"architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid",
           "eos_token_id": [1, 106], "final_logit_softcapping": None, "head_dim": 16,
           "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 32, "initializer_range": 0.02,
           "intermediate_size": 64, "max_position_embeddings": 32768, "model_type": "gemma3_text",
           "num_attention_heads": 4, "num_hidden_layers": 6, "num_key_value_heads": 1, "pad_token_id": 0,
           "query_pre_attn_scalar": 16, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
           "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "rope_theta": 1000000,
           "sliding_window": 5, "sliding_window_pattern": 6, "torch_dtype": "float32",
           "transformers_version": "4.50.0.dev0", "use_cache": True, "vocab_size": 137}
    w = gemma_weights(gen, 32, 64, 16, 64, 137, 6, 16, True)
    return cfg, dict(w), lambda ids: gemma_forward(cfg, f64(w), ids)


def gemma3_layer_types_model(gen):
    """Gemma 3 as later transformers write it (layer_types), with query_pre_attn_scalar
    other than head_dim (as the 27B's): Hugging Face folder only, since llama.cpp's
    GGUF carries neither (it infers both from the layer count)."""
    cfg = {"architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attn_logit_softcapping": None,
           "final_logit_softcapping": None, "head_dim": 16, "hidden_activation": "gelu_pytorch_tanh",
           "hidden_size": 48, "intermediate_size": 64, "layer_types": ["full_attention", "sliding_attention",
           "sliding_attention"], "max_position_embeddings": 32768, "model_type": "gemma3_text",
           "num_attention_heads": 4, "num_hidden_layers": 3, "num_key_value_heads": 2,
           "query_pre_attn_scalar": 12, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0,
           "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": 4, "vocab_size": 139}
    w = gemma_weights(gen, 48, 64, 32, 64, 139, 3, 16, True)
    return cfg, dict(w), lambda ids: gemma_forward(cfg, f64(w), ids)


def mistral_window_model(gen):  # Mistral with a sliding window of 6 < the test's positions: HF folder only
    cfg = {"architectures": ["MistralForCausalLM"], "hidden_act": "silu", "hidden_size": 32,
           "intermediate_size": 64, "max_position_embeddings": 32768, "model_type": "mistral",
           "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-05,
           "rope_theta": 10000.0, "sliding_window": 6, "tie_word_embeddings": False, "vocab_size": 101}
    w = llama_weights(gen, 32, 16, 64, 101, 2, False, False)
    return cfg, dict(w), lambda ids: llama_forward(cfg, f64(w), ids, False)


def w16_norms(w):  # the norms as the gemma2 checkpoint stores them (bf16)
    return {k: t.to(torch.bfloat16).to(torch.float32) if "norm" in k else t for k, t in w.items()}


GEMMA_LAYER = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
               "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
               "self_attn.k_norm": "attn_k_norm", "post_attention_layernorm": "post_attention_norm",
               "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm",
               "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def write_gemma_gguf(path, cfg, stored):
    """Gemma2Model / Gemma3Model of convert_hf_to_gguf.py: norms + 1 ("norm.weight"),
    no lm_head (tied), no q/k permutation (NeoX RoPE), the soft-capping and window keys."""
    arch = {"gemma2": "gemma2", "gemma3_text": "gemma3"}[cfg["model_type"]]
    g = gguf_file
    kvs = [("general.architecture", g.STRING, arch), ("general.name", g.STRING, "tiny-" + arch),
           (arch + ".context_length", g.U32, cfg["max_position_embeddings"]),
           (arch + ".embedding_length", g.U32, cfg["hidden_size"]),
           (arch + ".block_count", g.U32, cfg["num_hidden_layers"]),
           (arch + ".feed_forward_length", g.U32, cfg["intermediate_size"]),
           (arch + ".attention.head_count", g.U32, cfg["num_attention_heads"]),
           (arch + ".attention.head_count_kv", g.U32, cfg["num_key_value_heads"]),
           (arch + ".attention.layer_norm_rms_epsilon", g.F32, cfg["rms_norm_eps"]),
           (arch + ".attention.key_length", g.U32, cfg["head_dim"]),
           (arch + ".attention.value_length", g.U32, cfg["head_dim"]),
           (arch + ".attention.sliding_window", g.U32, cfg["sliding_window"])]
    if GGUF_VOCAB:
        kvs += g.placeholder_vocab(cfg["vocab_size"])
    if arch == "gemma2":
        kvs += [(arch + ".attn_logit_softcapping", g.F32, cfg["attn_logit_softcapping"]),
                (arch + ".final_logit_softcapping", g.F32, cfg["final_logit_softcapping"])]
    else:
        kvs.append((arch + ".rope.freq_base", g.F32, float(cfg["rope_theta"])))
        scaling = cfg.get("rope_scaling")
        if scaling and scaling.get("rope_type") == "linear":
            kvs += [(arch + ".rope.scaling.type", g.STRING, "linear"),
                    (arch + ".rope.scaling.factor", g.F32, float(scaling["factor"]))]
    tensors = []
    for name, t in stored.items():
        t = t.to(torch.float32)
        if name.endswith("norm.weight"):
            t = t + 1
        if name in GGUF_TENSORS:
            gname = GGUF_TENSORS[name]
        else:
            parts = name.split(".")
            gname = f"blk.{parts[2]}.{GEMMA_LAYER['.'.join(parts[3:-1])]}.{parts[-1]}"
        tensors.append((gname, list(t.shape), t.contiguous().numpy().tobytes()))
    g.write_gguf(path, kvs, tensors)


# ---- GGUF as llama.cpp's convert_hf_to_gguf.py writes it ------------------------

GGUF_TENSORS = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                "lm_head.weight": "output.weight"}
GGUF_LAYER = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
              "self_attn.k_norm": "attn_k_norm", "post_attention_layernorm": "ffn_norm",
              "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
              "self_attn.qkv_proj": "attn_qkv", "mlp.gate_up_proj": "ffn_up"}  # Phi-3's fused ones


def gguf_name(hf):
    if hf in GGUF_TENSORS:
        return GGUF_TENSORS[hf]
    parts = hf.split(".")  # model.layers.N.<module>.<weight|bias>
    return f"blk.{parts[2]}.{GGUF_LAYER['.'.join(parts[3:-1])]}.{parts[-1]}"


def permute(weights, n_head, n_head_kv):  # LlamaModel.permute: half-split rows -> interleaved pairs
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def llama3_rope_factors(cfg, hd):  # LlamaModel.generate_extra_tensors: rope_freqs.weight
    scaling = cfg["rope_scaling"]
    freqs = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context_len / low, old_context_len / high
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            factors.append(1)
        elif wavelen > low_freq_wavelen:
            factors.append(factor)
        else:
            smooth = (old_context_len / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(factors, dtype=torch.float32)


def write_llama_gguf(path, cfg, stored):
    """llama / mistral -> "llama" (q, k permuted), qwen2 -> "qwen2", qwen3 -> "qwen3"."""
    arch = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "phi3": "phi3"}[cfg["model_type"]]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // nh
    g = gguf_file
    kvs = [("general.architecture", g.STRING, arch), ("general.name", g.STRING, "tiny-" + cfg["model_type"]),
           (arch + ".block_count", g.U32, cfg["num_hidden_layers"]),
           (arch + ".context_length", g.U32, cfg["max_position_embeddings"]),
           (arch + ".embedding_length", g.U32, cfg["hidden_size"]),
           (arch + ".feed_forward_length", g.U32, cfg["intermediate_size"]),
           (arch + ".attention.head_count", g.U32, nh), (arch + ".attention.head_count_kv", g.U32, nkv),
           (arch + ".rope.freq_base", g.F32, float(cfg["rope_theta"])),
           (arch + ".attention.layer_norm_rms_epsilon", g.F32, cfg["rms_norm_eps"]),
           (arch + ".vocab_size", g.U32, cfg["vocab_size"])]
    if cfg.get("head_dim"):
        kvs += [(arch + ".attention.key_length", g.U32, hd), (arch + ".attention.value_length", g.U32, hd)]
    if arch in ("llama", "phi3"):
        kvs.append((arch + ".rope.dimension_count", g.U32, hd))
    if arch == "phi3" and cfg.get("sliding_window"):
        kvs.append((arch + ".attention.sliding_window", g.U32, cfg["sliding_window"]))
    if GGUF_VOCAB:
        kvs += g.placeholder_vocab(cfg["vocab_size"])
    tensors = []
    for name, t in stored.items():
        t = t.to(torch.float32)
        if arch == "llama" and ".q_proj." in name:
            t = permute(t, nh, nh)
        if arch == "llama" and ".k_proj." in name:
            t = permute(t, nh, nkv)
        tensors.append((gguf_name(name), list(t.shape), t.contiguous().numpy().tobytes()))
    scaling = cfg.get("rope_scaling")
    if scaling and scaling.get("rope_type") == "llama3":
        tensors.append(("rope_freqs.weight", [hd // 2], llama3_rope_factors(cfg, hd).numpy().tobytes()))
    g.write_gguf(path, kvs, tensors)


# ---- driver -------------------------------------------------------------------

def rnd(gen, *shape, scale=None):
    fan_in = shape[-1] if len(shape) > 1 else 1
    s = scale if scale is not None else 1.0 / math.sqrt(fan_in) * 1.5
    return torch.randn(*shape, generator=gen, dtype=torch.float32) * s


def w16(w, dtype):  # the weights as the checkpoint stores them
    return {k: t.to(dtype).to(torch.float32) for k, t in w.items()}


def expected_for(forward):
    out = []
    for prompt in PROMPTS:
        seq, steps, greedy = list(prompt), [], []
        for _ in range(N_NEW):
            logits = forward(seq)[-1]
            steps.append([float(x) for x in logits])
            top2 = torch.topk(logits, 2).values
            nxt = int(torch.argmax(logits))
            greedy.append(nxt)
            seq.append(nxt)
            out_gap = float(top2[0] - top2[1])
            if out_gap < 1e-3:
                print(f"warning: near tie ({out_gap:.2e}) after {seq[:-1]}", file=sys.stderr)
        out.append({"prompt": prompt, "greedy": greedy, "step_logits": steps})
    return out


def write_model(root, name, cfg, stored, forward, shards=1, gguf=True):
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": [2, 3], "do_sample": True, "temperature": 0.7,
                   "top_p": 0.9}, f)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": {"content": "<s>", "lstrip": False}, "eos_token": "</s>",
                   "add_bos_token": True, "chat_template": "{{ messages }}"}, f)
    if shards > 1:
        write_sharded(folder, stored, shards)
    else:
        write_safetensors(os.path.join(folder, "model.safetensors"), stored)
    with torch.no_grad():
        expected = expected_for(forward)
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump({"arch": name, "prompts": expected}, f)
    if not gguf:
        return
    if cfg["model_type"] in ("gemma2", "gemma3_text"):
        write_gemma_gguf(os.path.join(root, name + ".gguf"), cfg, stored)
    elif "num_hidden_layers" in cfg:  # the Llama family: also as llama.cpp's GGUF, beside the folder
        write_llama_gguf(os.path.join(root, name + ".gguf"), cfg, stored)


def main():
    global GGUF_VOCAB
    args = sys.argv[1:]
    GGUF_VOCAB = "--gguf-vocab" in args
    args = [a for a in args if a != "--gguf-vocab"]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = args[0]
    gen = torch.Generator().manual_seed(1234)
    write_model(root, "gpt2", *gpt2_model(gen))
    write_model(root, "bloom", *bloom_model(gen))
    write_model(root, "llama", *llama_model(gen), shards=2)
    write_model(root, "qwen2", *qwen2_model(gen))
    write_model(root, "llama3", *llama3_model(gen))
    write_model(root, "mistral", *mistral_model(gen))
    write_model(root, "qwen3", *qwen3_model(gen))
    write_model(root, "smollm2", *smollm2_model(gen))
    write_model(root, "phi3", *phi3_model(gen))
    write_model(root, "gemma2", *gemma2_model(gen))
    write_model(root, "gemma3", *gemma3_model(gen))
    write_model(root, "gemma3_types", *gemma3_layer_types_model(gen), gguf=False)
    write_model(root, "mistral_window", *mistral_window_model(gen), gguf=False)
    print(f"wrote {', '.join(ARCHS)} checkpoints (and the Llama family's and Gemma's GGUF files) and expectations to {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
