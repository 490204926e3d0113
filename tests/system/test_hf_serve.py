"""`plimsoll serve` and `plimsoll generate` on a Hugging Face folder (issue 4):
a tiny random Qwen2 checkpoint written here (safetensors, no torch needed)
with the committed qwen2_5-small tokenizer.json, Qwen2.5's chat template in
tokenizer_config.json and a generation_config.json. A chat completion's
prompt is the reference rendering (@huggingface/jinja) tokenized as
@huggingface/tokenizers does (tests/data/chat_templates/chat_ids.jsonl)."""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest
from array import array

from server import BINARY, REPO, Server

sys.path.insert(0, os.path.join(REPO, "tests", "reference"))
from safetensors_file import write_safetensors  # noqa: E402  (stdlib only)

DATA = os.path.join(REPO, "tests", "data")
HIDDEN, HEADS, KV_HEADS, LAYERS, FFN, VOCAB = 64, 4, 2, 2, 128, 6400
GENERATION_CONFIG = {"do_sample": False, "repetition_penalty": 1.05, "max_new_tokens": 5,
                     "eos_token_id": [6258, 6256]}  # <|im_end|>, <|endoftext|>


def write_random_safetensors(path, tensors):
    """tensors: list of (name, shape); F32 values drawn from a seeded generator
    (norm weights near 1, the rest N(0, 0.08))."""
    rng = random.Random(4)
    out = []
    for name, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        if name.endswith("norm.weight"):
            values = array("f", (1.0 + rng.uniform(-0.1, 0.1) for _ in range(n)))
        else:
            values = array("f", (rng.gauss(0.0, 0.08) for _ in range(n)))
        out.append((name, "F32", shape, values.tobytes()))
    write_safetensors(path, out)


def make_qwen2_folder(folder):
    head_dim = HIDDEN // HEADS
    config = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": HIDDEN,
              "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "num_hidden_layers": LAYERS,
              "intermediate_size": FFN, "vocab_size": VOCAB, "max_position_embeddings": 512,
              "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "float32"}
    tensors = [("model.embed_tokens.weight", [VOCAB, HIDDEN]), ("model.norm.weight", [HIDDEN])]
    for layer in range(LAYERS):
        p = "model.layers.%d." % layer
        tensors += [(p + "input_layernorm.weight", [HIDDEN]), (p + "post_attention_layernorm.weight", [HIDDEN]),
                    (p + "self_attn.q_proj.weight", [HIDDEN, HIDDEN]), (p + "self_attn.q_proj.bias", [HIDDEN]),
                    (p + "self_attn.k_proj.weight", [KV_HEADS * head_dim, HIDDEN]),
                    (p + "self_attn.k_proj.bias", [KV_HEADS * head_dim]),
                    (p + "self_attn.v_proj.weight", [KV_HEADS * head_dim, HIDDEN]),
                    (p + "self_attn.v_proj.bias", [KV_HEADS * head_dim]),
                    (p + "self_attn.o_proj.weight", [HIDDEN, HIDDEN]),
                    (p + "mlp.gate_proj.weight", [FFN, HIDDEN]), (p + "mlp.up_proj.weight", [FFN, HIDDEN]),
                    (p + "mlp.down_proj.weight", [HIDDEN, FFN])]
    write_random_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    small = os.path.join(DATA, "hf_tokenizer", "qwen2_5-small")
    shutil.copy(os.path.join(small, "tokenizer.json"), folder)
    with open(os.path.join(small, "tokenizer_config.json")) as f:
        tokenizer_config = json.load(f)
    with open(os.path.join(DATA, "chat_templates", "qwen2_5.jinja")) as f:
        tokenizer_config["chat_template"] = f.read()
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config, f)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump(GENERATION_CONFIG, f)


def reference_chats():
    with open(os.path.join(DATA, "chat_templates", "chat_ids.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if r["template"] == "qwen2_5"]


class HfFolderServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="plimsoll-hf-serve-")
        cls.folder = os.path.join(cls.tmp, "tiny-qwen2")
        os.mkdir(cls.folder)
        make_qwen2_folder(cls.folder)
        cls.server = Server("--memory-limit", "512Mi", "--max-total-tokens", "256", model=cls.folder)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if code != 0:
            raise AssertionError("server exited %s after SIGTERM:\n%s" % (code, cls.server.output()[-2000:]))

    def test_start_up_names_tokenizer_and_template(self):
        out = self.server.output()
        self.assertIn("tokenizer: %s/tokenizer.json" % self.folder, out)
        self.assertIn("chat template: %s/tokenizer_config.json: chat_template" % self.folder, out)

    def test_chat_prompt_is_the_reference_rendering_and_ids(self):
        rows = reference_chats()
        self.assertGreaterEqual(len(rows), 8)
        for r in rows:
            status, body, _ = self.server.post_json("/v1/chat/completions",
                                                    {"messages": r["messages"], "max_tokens": 2})
            self.assertEqual(status, 200, (r["conversation"], body))
            self.assertEqual(body["usage"]["prompt_tokens"], len(r["ids"]), r["conversation"])
            status, spans, _ = self.server.post_json("/tokenize", {"inputs": r["output"]})
            self.assertEqual(status, 200, spans)
            self.assertEqual([s["id"] for s in spans], r["ids"], r["conversation"])

    def test_generation_config_defaults_and_eos_list(self):
        status, body, _ = self.server.post_json("/generate", {"inputs": "Hello", "parameters": {"details": True}})
        self.assertEqual(status, 200, body)
        d = body["details"]
        self.assertIn(d["finish_reason"], ("length", "eos_token"))
        self.assertLessEqual(d["generated_tokens"], GENERATION_CONFIG["max_new_tokens"])
        if d["finish_reason"] == "eos_token":
            self.assertIn(d["tokens"][-1]["id"], GENERATION_CONFIG["eos_token_id"])
        again = self.server.post_json("/generate", {"inputs": "Hello", "parameters": {"details": True}})[1]
        self.assertEqual(again["generated_text"], body["generated_text"])  # greedy: do_sample false

    def test_generate_command_agrees_with_serve(self):
        prompt = "Once upon a time"
        out = subprocess.run([BINARY, "generate", "--model", self.folder, "--prompt", prompt, "-n", "12"],
                             capture_output=True, text=True, check=True)
        self.assertTrue(out.stdout.startswith(prompt), out.stdout)
        status, body, _ = self.server.post_json("/generate", {"inputs": prompt, "parameters": {"max_new_tokens": 12}})
        self.assertEqual(status, 200, body)
        self.assertEqual(out.stdout[len(prompt):-1], body["generated_text"])


if __name__ == "__main__":
    unittest.main()
