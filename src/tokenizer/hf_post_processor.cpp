// Post-processor parsing: walks the "single" template of TemplateProcessing
// and collects the special ids on either side of the sequence "A".
#include "tokenizer/hf_post_processor.h"

namespace plimsoll::hf {
namespace {

Result<std::vector<int32_t>> special_ids(const Json& json, const std::string& name,
                                         const std::string& where) {
  const Json* specials = find_member(json, "special_tokens");
  const Json* entry = specials == nullptr ? nullptr : find_member(*specials, name);
  const Json* ids = entry == nullptr ? nullptr : find_member(*entry, "ids");
  if (ids == nullptr || !ids->is_array()) {
    return invalid_field(where, "special_tokens", "has no ids for '" + name + "'");
  }
  std::vector<int32_t> out;
  for (const Json& id : *ids) {
    if (!id.is_number_integer()) return invalid_field(where, "special_tokens", "has a bad id");
    out.push_back(id.get<int32_t>());
  }
  return out;
}

Result<SpecialWrap> parse_template(const Json& json, const std::string& where) {
  const Json* single = find_member(json, "single");
  if (single == nullptr || !single->is_array()) return invalid_field(where, "single", "is not a list");
  SpecialWrap wrap;
  bool seen_sequence = false;
  for (const Json& item : *single) {
    if (find_member(item, "Sequence") != nullptr) {
      seen_sequence = true;
      continue;
    }
    const Json* special = find_member(item, "SpecialToken");
    if (special == nullptr) return invalid_field(where, "single", "has an item of unknown kind");
    PLIMSOLL_ASSIGN(const std::string name, get_string(*special, "id", field_name(where, "single")));
    PLIMSOLL_ASSIGN(std::vector<int32_t> ids, special_ids(json, name, where));
    auto& side = seen_sequence ? wrap.suffix_ids : wrap.prefix_ids;
    side.insert(side.end(), ids.begin(), ids.end());
  }
  return wrap;
}

Result<int32_t> pair_id(const Json& json, const char* key, const std::string& where) {
  const Json* pair = find_member(json, key);
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 || !(*pair)[1].is_number_integer()) {
    return invalid_field(where, key, "is not a [token, id] pair");
  }
  return (*pair)[1].get<int32_t>();
}

}  // namespace

Result<SpecialWrap> parse_post_processor(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(const std::string type, get_string(json, "type", where));
  if (type == "TemplateProcessing") return parse_template(json, where);
  if (type == "ByteLevel") return SpecialWrap{};
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    PLIMSOLL_ASSIGN(const int32_t cls, pair_id(json, "cls", where));
    PLIMSOLL_ASSIGN(const int32_t sep, pair_id(json, "sep", where));
    return SpecialWrap{{cls}, {sep}};
  }
  if (type == "Sequence") {
    const Json* list = find_member(json, "processors");
    if (list == nullptr || !list->is_array()) return invalid_field(where, "processors", "is not a list");
    SpecialWrap wrap;
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string item = field_name(where, "processors") + "[" + std::to_string(i) + "]";
      PLIMSOLL_ASSIGN(SpecialWrap part, parse_post_processor((*list)[i], item));
      wrap.prefix_ids.insert(wrap.prefix_ids.end(), part.prefix_ids.begin(), part.prefix_ids.end());
      wrap.suffix_ids.insert(wrap.suffix_ids.end(), part.suffix_ids.begin(), part.suffix_ids.end());
    }
    return wrap;
  }
  return unsupported_value(where, "type", type);
}

}  // namespace plimsoll::hf
