// TGI parameter validation (messages as TGI's validation.rs words them) and
// prompt tokenization with the input / total token limits.
#include "api/validation.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "api/field_reader.h"
#include "api/grammar_params.h"

namespace plimsoll::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorCode::kInvalidArgument, std::move(message)); }

bool open_unit(double v) { return v > 0.0 && v < 1.0; }

// TGI samples when the client sends no `parameters` at all.
TgiParameters defaults_without_parameters() {
  TgiParameters p;
  p.sampling.do_sample = true;
  return p;
}

Status read_sampling(const FieldReader& f, SamplingParams* s) {
  PLIMSOLL_ASSIGN(auto do_sample, f.boolean("do_sample"));
  PLIMSOLL_ASSIGN(auto temperature, f.number("temperature"));
  PLIMSOLL_ASSIGN(auto repetition_penalty, f.number("repetition_penalty"));
  PLIMSOLL_ASSIGN(auto frequency_penalty, f.number("frequency_penalty"));
  PLIMSOLL_ASSIGN(auto top_k, f.integer("top_k"));
  PLIMSOLL_ASSIGN(auto top_p, f.number("top_p"));
  PLIMSOLL_ASSIGN(auto typical_p, f.number("typical_p"));
  PLIMSOLL_ASSIGN(auto seed, f.unsigned_integer("seed"));
  if (temperature && !(*temperature > 0)) return invalid("`temperature` must be strictly positive");
  if (repetition_penalty && !(*repetition_penalty > 0)) {
    return invalid("`repetition_penalty` must be strictly positive");
  }
  if (frequency_penalty && !(*frequency_penalty >= -2.0 && *frequency_penalty <= 2.0)) {
    return invalid("`frequency_penalty` must be >= -2.0 and <= 2.0");
  }
  if (top_k && (*top_k <= 0 || *top_k > INT32_MAX)) return invalid("`top_k` must be strictly positive");
  if (top_p && !open_unit(*top_p)) return invalid("`top_p` must be > 0.0 and < 1.0");
  if (typical_p && !open_unit(*typical_p)) return invalid("`typical_p` must be > 0.0 and < 1.0");
  if (do_sample) s->do_sample = *do_sample;
  if (temperature) s->temperature = static_cast<float>(*temperature);
  if (repetition_penalty) s->repetition_penalty = static_cast<float>(*repetition_penalty);
  if (frequency_penalty) s->frequency_penalty = static_cast<float>(*frequency_penalty);
  if (top_k) s->top_k = static_cast<int32_t>(*top_k);
  if (top_p) s->top_p = static_cast<float>(*top_p);
  if (typical_p) s->typical_p = static_cast<float>(*typical_p);
  s->seed = seed;
  return {};
}

// TGI's checks and messages (validation.rs), in its order.
Result<int64_t> read_best_of(const FieldReader& f, const SamplingParams& s,
                             const sched::ServiceLimits& limits, bool streaming) {
  PLIMSOLL_ASSIGN(auto best_of, f.integer("best_of"));
  if (!best_of || *best_of == 1) return int64_t{1};
  if (streaming) return invalid("`best_of` != 1 is not allowed for this endpoint");
  if (*best_of <= 0 || *best_of > limits.max_best_of) {
    return invalid(fmt::format("`best_of` must be > 0 and <= {}. Given: {}", limits.max_best_of, *best_of));
  }
  if (!s.samples()) return invalid("you must use sampling when `best_of` is > 1");
  if (s.seed) return invalid("`seed` must not be set when `best_of` > 1");
  return *best_of;
}

Status read_unsupported(const FieldReader& f) {
  PLIMSOLL_ASSIGN(auto watermark, f.boolean("watermark"));
  if (watermark && *watermark) return invalid("`watermark` is not supported by this server");
  PLIMSOLL_ASSIGN(auto adapter, f.string("adapter_id"));
  if (adapter && !adapter->empty()) return invalid("`adapter_id` is not supported by this server (no LoRA adapters)");
  return {};
}

Status read_options(const FieldReader& f, const sched::ServiceLimits& limits, bool streaming,
                    bool default_full_text, TgiOptions* o) {
  PLIMSOLL_ASSIGN(o->priority, read_priority(f));
  PLIMSOLL_ASSIGN(auto details, f.boolean("details"));
  PLIMSOLL_ASSIGN(auto full_text, f.boolean("return_full_text"));
  PLIMSOLL_ASSIGN(auto input_details, f.boolean("decoder_input_details"));
  PLIMSOLL_ASSIGN(auto top_n, f.integer("top_n_tokens"));
  PLIMSOLL_ASSIGN(auto max_new_tokens, f.integer("max_new_tokens"));
  PLIMSOLL_ASSIGN(auto truncate, f.integer("truncate"));
  if (input_details && *input_details && streaming) {
    return invalid("`decoder_input_details` == true is not supported when streaming tokens");
  }
  if (top_n && (*top_n < 0 || *top_n > limits.max_top_n_tokens)) {
    return invalid(fmt::format("`top_n_tokens` must be >= 0 and <= {}. Given: {}", limits.max_top_n_tokens, *top_n));
  }
  if (max_new_tokens && *max_new_tokens <= 0) return invalid("`max_new_tokens` must be strictly positive");
  if (truncate && (*truncate <= 0 || (limits.max_input_tokens > 0 && *truncate > limits.max_input_tokens))) {
    return invalid(fmt::format("`truncate` must be strictly positive and less than {}. Given: {}",
                               limits.max_input_tokens, *truncate));
  }
  o->details = details.value_or(false);
  o->return_full_text = full_text.value_or(default_full_text);
  o->decoder_input_details = input_details.value_or(false);
  o->top_n_tokens = static_cast<int32_t>(top_n.value_or(0));
  o->max_new_tokens = max_new_tokens;
  o->truncate = truncate;
  return {};
}

}  // namespace

Result<int32_t> read_priority(const FieldReader& f) {
  PLIMSOLL_ASSIGN(auto priority, f.integer("priority"));
  if (priority && (*priority < INT32_MIN || *priority > INT32_MAX)) {
    return invalid(fmt::format("`priority` must be a 32-bit integer (lower runs first). Given: {}", *priority));
  }
  return static_cast<int32_t>(priority.value_or(0));
}

Status check_stop(const StopList& stop, const sched::ServiceLimits& limits) {
  if (static_cast<int64_t>(stop.size()) > limits.max_stop_sequences) {
    return invalid(
        fmt::format("`stop` supports up to {} stop sequences. Given: {}", limits.max_stop_sequences, stop.size()));
  }
  for (const std::string& s : stop) {
    if (s.empty()) return invalid("`stop` sequences must not be empty");
  }
  return {};
}

Status check_client_batch(size_t items, const sched::ServiceLimits& limits) {
  if (items == 0) return invalid("`inputs` cannot be empty");
  if (limits.max_client_batch_size > 0 && static_cast<int64_t>(items) > limits.max_client_batch_size) {
    return invalid(fmt::format("`inputs` holds {} items; at most {} per request (max_client_batch_size)", items,
                               limits.max_client_batch_size));
  }
  return {};
}

int64_t tokenized_bytes(const std::string& text, const TextTokenizer& tokenizer, const sched::ServiceLimits& limits) {
  const int64_t size = static_cast<int64_t>(text.size());
  if (limits.max_input_tokens <= 0) return size;
  return std::min(size, (limits.max_input_tokens + 2) * tokenizer.max_token_bytes());
}

int64_t default_max_new_tokens(const GenerationDefaults& d, int64_t fallback) {
  return d.max_new_tokens && *d.max_new_tokens > 0 ? *d.max_new_tokens : fallback;
}

Result<TgiParameters> parse_tgi_parameters(const json* parameters,
                                           const sched::ServiceLimits& limits, bool streaming,
                                           const GenerationDefaults& defaults, bool default_full_text, std::string_view body_text,
                                           GrammarCache* grammars) {
  if (!parameters || parameters->is_null()) {
    TgiParameters p = defaults_without_parameters();
    apply_generation_defaults(defaults, &p.sampling);
    p.options.return_full_text = default_full_text;
    return p;
  }
  if (!parameters->is_object()) {
    return invalid(std::string("`parameters` must be an object, got ") + json_type_name(*parameters));
  }
  FieldReader f(*parameters);
  TgiParameters p;
  GenerationDefaults model = defaults;
  PLIMSOLL_ASSIGN(auto do_sample, f.boolean("do_sample"));
  if (do_sample && !*do_sample) model.do_sample = false;  // greedy asked for: not the model's warpers
  apply_generation_defaults(model, &p.sampling);
  PLIMSOLL_TRY(read_sampling(f, &p.sampling));
  PLIMSOLL_ASSIGN(const int64_t best_of, read_best_of(f, p.sampling, limits, streaming));
  PLIMSOLL_TRY(read_unsupported(f));
  PLIMSOLL_ASSIGN(const GrammarHandle grammar,
                  read_tgi_grammar(f, GrammarLimits{}, BodyPath{body_text, {"parameters"}}, grammars));
  p.sampling.grammar = grammar.grammar;
  p.sampling.grammar_cached = grammar.cached;
  PLIMSOLL_TRY(read_options(f, limits, streaming, default_full_text, &p.options));
  p.options.best_of = best_of;
  PLIMSOLL_ASSIGN(auto stop, f.strings("stop", false));
  if (stop) p.sampling.stop = std::move(*stop);
  PLIMSOLL_TRY(check_stop(p.sampling.stop, limits));
  return p;
}

namespace {

// Tokenizes plan.text (cut by length first with truncate, refused by length
// when it cannot fit) or takes plan.ids after checking them.
Status prompt_ids(const PromptPlan& plan, const TextTokenizer& tokenizer, const sched::ServiceLimits& limits,
                  std::vector<int32_t>* ids) {
  const std::string field = std::string("`") + plan.field + "`";
  if (plan.ids) {
    if (plan.ids->empty()) return invalid(field + " token lists cannot be empty");
    const int64_t vocab = tokenizer.vocab_size();
    for (int32_t id : *plan.ids) {
      if (id < 0 || id >= vocab) {
        return invalid(fmt::format("{} holds token id {}, outside the vocabulary (0 to {})", field, id, vocab - 1));
      }
    }
    *ids = *plan.ids;
    return {};
  }
  if (plan.text.empty()) return invalid(field + " cannot be empty");
  bool add_special = plan.add_special.value_or(tokenizer.add_special_by_default());
  if (!plan.add_special && plan.parse_special && tokenizer.bos_id() >= 0 &&
      std::string_view(plan.text).starts_with(tokenizer.token(tokenizer.bos_id()))) {
    add_special = false;  // a prompt that writes BOS itself
  }
  // Refuse or cut by length before tokenizing: encoding costs memory and time
  // in proportion to the bytes, and a text of n bytes has at least
  // n / max_token_bytes tokens.
  std::string_view text = plan.text;
  const int64_t per_token = tokenizer.max_token_bytes();
  const int64_t keep_tokens = plan.truncate ? *plan.truncate : limits.max_input_tokens;
  if (keep_tokens > 0 && static_cast<int64_t>(text.size()) > (keep_tokens + 2) * per_token) {
    if (!plan.truncate) {
      return invalid(fmt::format("{} must have less than {} tokens. Given: at least {} ({} bytes)", field,
                                 limits.max_input_tokens, static_cast<int64_t>(text.size()) / per_token, text.size()));
    }
    size_t cut = text.size() - static_cast<size_t>((keep_tokens + 2) * per_token);
    while (cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) ++cut;  // a UTF-8 boundary
    text.remove_prefix(cut);
  }
  *ids = tokenizer.encode_prompt(text, add_special, plan.parse_special);
  return {};
}

}  // namespace

Status build_prompt(const PromptPlan& plan, const TextTokenizer& tokenizer,
                    const sched::ServiceLimits& limits, int64_t default_max_new_tokens,
                    sched::GenerationRequest* request) {
  auto& ids = request->prompt_ids;
  PLIMSOLL_TRY(prompt_ids(plan, tokenizer, limits, &ids));
  if (plan.truncate && static_cast<int64_t>(ids.size()) > *plan.truncate) {
    ids.erase(ids.begin(), ids.end() - *plan.truncate);  // TGI truncates on the left
  }
  const std::string field = std::string("`") + plan.field + "`";
  const std::string max_field = std::string("`") + plan.max_field + "`";
  const int64_t input_tokens = static_cast<int64_t>(ids.size());
  if (limits.max_input_tokens > 0 && input_tokens > limits.max_input_tokens) {
    return invalid(fmt::format("{} must have less than {} tokens. Given: {}", field, limits.max_input_tokens, input_tokens));
  }
  const bool bounded = limits.max_total_tokens > 0;
  int64_t max_new = plan.max_new_tokens.value_or(default_max_new_tokens);
  if (!plan.max_new_tokens && plan.default_max_length) {
    max_new = std::max<int64_t>(1, *plan.default_max_length - input_tokens);
  }
  if (!plan.max_new_tokens && bounded) {
    max_new = std::min(max_new, limits.max_total_tokens - input_tokens);
  }
  // (Compared without adding: a client's max_new may be as large as int64 goes.)
  if (bounded && (max_new <= 0 || max_new > limits.max_total_tokens - input_tokens)) {
    return invalid(fmt::format("{} tokens + {} must be <= {}. Given: {} {} tokens and {} {}", field, max_field,
                               limits.max_total_tokens, input_tokens, field, std::max<int64_t>(max_new, 1), max_field));
  }
  // Admission checks this too, naming TGI's field; here the route's own name is used.
  const auto& grammar = request->params.grammar;
  if (grammar && max_new < grammar->min_output_bytes()) {
    return invalid(fmt::format("{} of {} is too small for the grammar: its shortest output takes up to {} tokens",
                               max_field, max_new, grammar->min_output_bytes()));
  }
  request->params.max_new_tokens = max_new;
  return {};
}

}  // namespace plimsoll::api
