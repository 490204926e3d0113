// The post-processor of tokenizer.json, reduced to what encode(add_special)
// needs: the ids put before and after a single sequence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "tokenizer/hf_json.h"

namespace plimsoll::hf {

struct SpecialWrap {
  std::vector<int32_t> prefix_ids;  // e.g. BOS
  std::vector<int32_t> suffix_ids;  // e.g. EOS
};

// TemplateProcessing (its "single" template), ByteLevel (adds nothing),
// RobertaProcessing/BertProcessing (cls ... sep) and Sequence of these.
Result<SpecialWrap> parse_post_processor(const Json& json, const std::string& where);

}  // namespace plimsoll::hf
