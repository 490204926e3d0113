#!/usr/bin/env python3
# Builds tiny random Hugging Face checkpoints (GPT-2, BLOOM, Llama, Qwen2) and
# their expected logits and greedy continuations, from the HF modeling formulas.
"""Usage: hf_reference.py OUT_DIR

Writes OUT_DIR/<arch>/{config.json, model.safetensors or shards + index,
generation_config.json, tokenizer_config.json, expected.json}.

The forward passes below are written from the Hugging Face modeling code
(modeling_gpt2.py, modeling_bloom.py, modeling_llama.py, modeling_qwen2.py),
one formula at a time, and run in float64 on the weights as stored (the f16 /
bf16 checkpoints are rounded first), so they are an independent oracle for
Plimsoll's f32 forward passes.
"""
import json
import math
import os
import sys

import torch

import safetensors_file  # tests/reference/, beside this file

N_NEW = 6  # greedy tokens after each prompt
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


def causal_attention(q, k, v, bias=None):
    """q [H, T, hd], k/v [H, T, hd]; bias [H, 1, T] added to the scores."""
    hd = q.shape[-1]
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
    if bias is not None:
        scores = scores + bias
    t = q.shape[1]
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
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


# ---- Llama / Qwen2 ------------------------------------------------------------

def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(x, theta):  # x [H, T, hd]: LlamaRotaryEmbedding + apply_rotary_pos_emb
    hd, t = x.shape[-1], x.shape[1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    freqs = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def llama_forward(cfg, w, ids, qkv_bias):
    nh, nkv, eps, theta = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["rms_norm_eps"], cfg["rope_theta"]
    h = w["model.embed_tokens.weight"][torch.tensor(ids)]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        proj = {}
        for n in "qkv":
            proj[n] = a @ w[p + f"self_attn.{n}_proj.weight"].T
            if qkv_bias:
                proj[n] = proj[n] + w[p + f"self_attn.{n}_proj.bias"]
        q, k, v = rope(heads(proj["q"], nh), theta), rope(heads(proj["k"], nkv), theta), heads(proj["v"], nkv)
        k, v = k.repeat_interleave(nh // nkv, dim=0), v.repeat_interleave(nh // nkv, dim=0)  # repeat_kv
        h = h + merge(causal_attention(q, k, v)) @ w[p + "self_attn.o_proj.weight"].T
        m = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        gate = m @ w[p + "mlp.gate_proj.weight"].T
        m = (gate * torch.sigmoid(gate) * (m @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        h = h + m
    h = rms_norm(h, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return h @ head.T


def llama_weights(gen, d, kv, f, v, layers, qkv_bias, tied):
    w = {"model.embed_tokens.weight": rnd(gen, v, d), "model.norm.weight": 1 + rnd(gen, d, scale=0.1)}
    if not tied:
        w["lm_head.weight"] = rnd(gen, v, d)
    for l in range(layers):
        p = f"model.layers.{l}."
        w.update({p + "input_layernorm.weight": 1 + rnd(gen, d, scale=0.1),
                  p + "self_attn.q_proj.weight": rnd(gen, d, d), p + "self_attn.k_proj.weight": rnd(gen, kv, d),
                  p + "self_attn.v_proj.weight": rnd(gen, kv, d), p + "self_attn.o_proj.weight": rnd(gen, d, d),
                  p + "post_attention_layernorm.weight": 1 + rnd(gen, d, scale=0.1),
                  p + "mlp.gate_proj.weight": rnd(gen, f, d), p + "mlp.up_proj.weight": rnd(gen, f, d),
                  p + "mlp.down_proj.weight": rnd(gen, d, f)})
        if qkv_bias:
            w.update({p + "self_attn.q_proj.bias": rnd(gen, d, scale=0.3),
                      p + "self_attn.k_proj.bias": rnd(gen, kv, scale=0.3),
                      p + "self_attn.v_proj.bias": rnd(gen, kv, scale=0.3)})
    return w


def llama_model(gen):
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "intermediate_size": 64, "vocab_size": 103, "max_position_embeddings": 64,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
           "hidden_act": "silu", "rope_scaling": None}
    w = llama_weights(gen, 32, 16, 64, 103, 2, False, False)
    stored = {k: t.to(torch.bfloat16) for k, t in w.items()}  # bf16 and sharded
    return cfg, stored, lambda ids: llama_forward(cfg, f64(w16(w, torch.bfloat16)), ids, False)


def qwen2_model(gen):
    cfg = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "intermediate_size": 64, "vocab_size": 107, "max_position_embeddings": 128,
           "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True,
           "hidden_act": "silu", "use_sliding_window": False}
    w = llama_weights(gen, 32, 16, 64, 107, 2, True, True)
    return cfg, dict(w), lambda ids: llama_forward(cfg, f64(w), ids, True)


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


def write_model(root, name, cfg, stored, forward, shards=1):
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


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    gen = torch.Generator().manual_seed(1234)
    write_model(root, "gpt2", *gpt2_model(gen))
    write_model(root, "bloom", *bloom_model(gen))
    write_model(root, "llama", *llama_model(gen), shards=2)
    write_model(root, "qwen2", *qwen2_model(gen))
    print(f"wrote gpt2, bloom, llama, qwen2 checkpoints and expectations to {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
