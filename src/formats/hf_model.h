// Hugging Face model folders: config.json (llama, mistral, qwen2, gpt2,
// bloom) + safetensors weights renamed to GGUF's names, and the settings files.
#pragma once

#include <string>

#include "core/result.h"
#include "core/generation_defaults.h"
#include "formats/json_file.h"
#include "core/model_config.h"
#include "formats/model_file.h"
#include "formats/safetensors.h"

namespace plimsoll {

// config.json -> ModelConfig. Unknown model_type, or a feature we do not
// implement (rope_scaling, an activation other than silu / gelu tanh, ...) is an
// error naming the file and the field. HF Llama-family checkpoints use the
// half-split RoPE layout.
Result<ModelConfig> config_from_hf(const JsonFile& config);

// generation_config.json / tokenizer_config.json (errors name the file and field).
Result<GenerationDefaults> generation_defaults_from_json(const JsonFile& file);
Result<TokenizerSettings> tokenizer_settings_from_json(const JsonFile& file);

// The safetensors tensors under GGUF names into `store`: GPT-2's Conv1D
// weights ([in, out]) transposed, BLOOM's fused query_key_value rows reordered
// from [n_heads, 3, head_dim] to [3, n_heads, head_dim], GPT-2's c_attn kept fused
// (attn_qkv), norms and biases widened to f32; all of those in owned buffers,
// the rest as views into the mapped files. Unknown tensors are errors.
Status add_hf_tensors(const ModelConfig& config, SafetensorsSet set, TensorStore& store);

// The Hugging Face name of a GGUF tensor name for this architecture ("" when
// there is none), for error messages: "blk.0.ffn_down.bias" -> "[transformer.]h.0.mlp.c_proj.bias".
std::string hf_tensor_name(const ModelConfig& config, const std::string& gguf_name);

// Loads a folder: config.json, model.safetensors or its index, and the
// optional generation_config.json and tokenizer_config.json. The vocabulary
// (tokenizer.json) is not read here.
Result<LoadedModel> load_hf_model(const std::string& dir);

}  // namespace plimsoll
