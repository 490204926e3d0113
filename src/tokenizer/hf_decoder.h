// Decoders of tokenizer.json ("decoder"): ByteLevel, Metaspace, Replace,
// ByteFallback, Fuse, Strip and Sequence, on token strings as raw bytes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "tokenizer/hf_json.h"

namespace plimsoll::hf {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF's decode_chain: rewrites the token strings (position matters for some,
  // e.g. Metaspace's first token). Strings are bytes; nothing is made lossy.
  virtual void decode_chain(std::vector<std::string>* tokens) const = 0;
};

// From the JSON object at `where` (e.g. "tokenizer.json: decoder").
Result<std::unique_ptr<Decoder>> make_decoder(const Json& json, const std::string& where);

}  // namespace plimsoll::hf
