// The table of serve's settings, and the text form of each value kind.
#include "server/serve_settings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>

#include "core/bytes.h"

namespace plimsoll {
namespace {

// --- value kinds: parse and format ---

Status invalid(const std::string& text, const char* want) {
  return make_error(ErrorCode::kInvalidArgument, "'" + text + "' is not " + want);
}

Result<int64_t> parse_int(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || *end != '\0' || errno == ERANGE) {
    return make_error(ErrorCode::kInvalidArgument, "'" + text + "' is not an integer");
  }
  return static_cast<int64_t>(v);
}

// 12Gi, 300Mi, 64Ki when whole, else bytes: what parse_bytes reads back exactly.
std::string bytes_text(int64_t b) {
  if (b > 0 && b % kGiB == 0) return std::to_string(b / kGiB) + "Gi";
  if (b > 0 && b % kMiB == 0) return std::to_string(b / kMiB) + "Mi";
  if (b > 0 && b % kKiB == 0) return std::to_string(b / kKiB) + "Ki";
  return std::to_string(b);
}

std::string format(SettingKind k, int64_t v) { return k == SettingKind::kBytes ? bytes_text(v) : std::to_string(v); }
std::string format(SettingKind, int v) { return std::to_string(v); }
std::string format(SettingKind, bool v) { return v ? "true" : "false"; }
std::string format(SettingKind, const std::string& v) { return v; }
std::string format(SettingKind, DType v) { return kv_cache_dtype_name(v); }
std::string format(SettingKind, double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back the same
  return std::string(buf, r.ptr);
}
std::string format(SettingKind k, const std::optional<int64_t>& v) { return v ? format(k, *v) : ""; }
std::string format(SettingKind k, const HighWaterSetting& v) {
  return v.bytes > 0 ? bytes_text(v.bytes) : format(k, v.fraction);
}

Status parse(SettingKind k, const std::string& t, int64_t& out) {
  if (k == SettingKind::kBytes) {
    PLIMSOLL_ASSIGN(out, parse_bytes(t));
    return {};
  }
  PLIMSOLL_ASSIGN(out, parse_int(t));
  return {};
}
Status parse(SettingKind, const std::string& t, int& out) {
  PLIMSOLL_ASSIGN(const int64_t v, parse_int(t));
  if (v < INT_MIN || v > INT_MAX) return invalid(t, "a 32-bit integer");
  out = static_cast<int>(v);
  return {};
}
Status parse(SettingKind, const std::string& t, double& out) {
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end == t.c_str() || *end != '\0') return invalid(t, "a number");
  out = v;
  return {};
}
Status parse(SettingKind, const std::string& t, bool& out) {
  std::string s = t;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (s == "true" || s == "1" || s == "yes" || s == "on") out = true;
  else if (s == "false" || s == "0" || s == "no" || s == "off") out = false;
  else return invalid(t, "true or false");
  return {};
}
Status parse(SettingKind, const std::string& t, std::string& out) {
  out = t;
  return {};
}
Status parse(SettingKind, const std::string& t, DType& out) {
  PLIMSOLL_ASSIGN(out, kv_cache_dtype_from_name(t));
  return {};
}
Status parse(SettingKind, const std::string& t, HighWaterSetting& out) {
  PLIMSOLL_ASSIGN(out, parse_high_water(t));
  return {};
}
// Optional limits: "" (and, for token counts, 0 or less, as TGI's "default 0") leave them unset.
Status parse(SettingKind k, const std::string& t, std::optional<int64_t>& out) {
  if (t.empty()) {
    out.reset();
    return {};
  }
  int64_t v = 0;
  PLIMSOLL_TRY(parse(k, t, v));
  out = (k == SettingKind::kInt && v <= 0) ? std::nullopt : std::optional<int64_t>(v);
  return {};
}

template <typename T>
using Field = T& (*)(ServeConfig&);

struct Use {
  bool changes_plan = false;
  bool in_plan = false;
  bool required = false;
};
constexpr Use kServeOnly{};
constexpr Use kPlanInput{true, true, false};  // changes the plan; plan accepts it

template <typename T>
ServeSetting row(std::string names, std::string env, SettingKind kind, Field<T> field, std::string help,
                 Use use = kServeOnly) {
  ServeSetting s;
  s.names = std::move(names);
  s.env = std::move(env);
  s.help = std::move(help);
  s.kind = kind;
  s.changes_plan = use.changes_plan;
  s.in_plan = use.in_plan;
  s.required = use.required;
  // read only reads: the const_cast lets one accessor serve both directions.
  s.read = [field, kind](const ServeConfig& c) { return format(kind, field(const_cast<ServeConfig&>(c))); };
  s.write = [field, kind](ServeConfig& c, const std::string& text) { return parse(kind, text, field(c)); };
  return s;
}

using K = SettingKind;

std::vector<ServeSetting> make_table() {
  std::vector<ServeSetting> t;
  // clang-format off
  t.push_back(row<std::string>("-m,--model", "MODEL_ID", K::kString, [](ServeConfig& c) -> auto& { return c.engine.model_path; },
      "Model: a GGUF or llama2.c file, a Hugging Face folder, or a Hugging Face repo id org/name[@revision] "
      "(downloaded into the Hugging Face cache: HF_HUB_CACHE or $HF_HOME/hub; HF_ENDPOINT, HF_TOKEN, "
      "HF_HUB_OFFLINE; see docs/huggingface.md)", {false, true, true}));
  t.push_back(row<std::string>("--revision", "REVISION", K::kString, [](ServeConfig& c) -> auto& { return c.model_revision; },
      "With a repo id: the branch, tag or commit (default main)", {false, true, false}));
  t.push_back(row<bool>("--offline", "", K::kSwitch, [](ServeConfig& c) -> auto& { return c.hub_offline; },
      "With a repo id: use only the Hugging Face cache (as HF_HUB_OFFLINE=1)", {false, true, false}));
  t.push_back(row<std::string>("--tokenizer", "PLIMSOLL_TOKENIZER", K::kString, [](ServeConfig& c) -> auto& { return c.engine.tokenizer_path; },
      "Tokenizer instead of the model's: tokenizer.json, GGUF, or llama2.c tokenizer.bin", {false, true, false}));
  t.push_back(row<std::string>("--hostname", "HOSTNAME", K::kString, [](ServeConfig& c) -> auto& { return c.api.hostname; },
      "Address to listen on"));
  t.push_back(row<int>("-p,--port", "PORT", K::kInt, [](ServeConfig& c) -> auto& { return c.api.port; },
      "Port to listen on (0: any free port)"));
  t.push_back(row<std::optional<int64_t>>("--memory-limit", "PLIMSOLL_MEMORY_LIMIT", K::kBytes, [](ServeConfig& c) -> auto& { return c.engine.memory_limit_bytes; },
      "Memory limit, e.g. 12Gi (default: the cgroup's limit, v2 or v1, else physical memory)", kPlanInput));
  t.push_back(row<double>("--memory-fraction", "PLIMSOLL_MEMORY_FRACTION", K::kNumber, [](ServeConfig& c) -> auto& { return c.engine.memory_fraction; },
      "Share of the limit the plan may use", kPlanInput));
  t.push_back(row<HighWaterSetting>("--memory-high-water", "PLIMSOLL_MEMORY_HIGH_WATER", K::kFractionOrBytes, [](ServeConfig& c) -> auto& { return c.memory_high_water; },
      "Backstop: from this usage of the limit (a fraction, or a size e.g. 480Mi) new requests get 429 until it falls"));
  t.push_back(row<std::optional<int64_t>>("--max-batch-memory", "PLIMSOLL_MAX_BATCH_MEMORY", K::kBytes, [](ServeConfig& c) -> auto& { return c.engine.max_batch_memory_bytes; },
      "Cap on the KV cache bytes all running sequences may hold, e.g. 4Gi", kPlanInput));
  t.push_back(row<int64_t>("--max-concurrent-requests", "MAX_CONCURRENT_REQUESTS", K::kInt, [](ServeConfig& c) -> auto& { return c.engine.max_concurrent_requests; },
      "Client calls in flight (running + queued); beyond it: 429", kPlanInput));
  t.push_back(row<std::optional<int64_t>>("--max-input-tokens", "MAX_INPUT_TOKENS", K::kInt, [](ServeConfig& c) -> auto& { return c.max_input_tokens; },
      "Prompt tokens per request (default: max-total-tokens - 1)"));
  // `plimsoll plan` takes --prompt-tokens + --max-new-tokens instead.
  t.push_back(row<int64_t>("--max-total-tokens", "MAX_TOTAL_TOKENS", K::kInt, [](ServeConfig& c) -> auto& { return c.engine.max_total_tokens; },
      "Prompt + new tokens per request (default 0: the model's context)", {true, false, false}));
  t.push_back(row<int64_t>("--max-batch-prefill-tokens", "MAX_BATCH_PREFILL_TOKENS", K::kInt, [](ServeConfig& c) -> auto& { return c.engine.step_tokens; },
      "Tokens per engine step", kPlanInput));
  t.push_back(row<std::optional<int64_t>>("--max-batch-total-tokens", "MAX_BATCH_TOTAL_TOKENS", K::kInt, [](ServeConfig& c) -> auto& { return c.max_batch_total_tokens; },
      "KV tokens of all running sequences: caps the KV pool, in whole blocks (default: what the plan holds; more is refused)",
      kPlanInput));
  t.push_back(row<int64_t>("--max-batch-size", "MAX_BATCH_SIZE", K::kInt, [](ServeConfig& c) -> auto& { return c.engine.step_seqs; },
      "Sequences per engine step", kPlanInput));
  t.push_back(row<std::optional<int64_t>>("--max-queued-tokens", "PLIMSOLL_MAX_QUEUED_TOKENS", K::kInt, [](ServeConfig& c) -> auto& { return c.max_queued_tokens; },
      "Tokens in flight (prompt + new, every item of every request) before 429 (default 0: 4 x max-batch-total-tokens)"));
  t.push_back(row<int64_t>("--max-waiting-tokens", "MAX_WAITING_TOKENS", K::kInt, [](ServeConfig& c) -> auto& { return c.max_waiting_tokens; },
      "Steps a waiting request that does not fit may be overtaken by smaller ones"));
  t.push_back(row<double>("--waiting-served-ratio", "WAITING_SERVED_RATIO", K::kNumber, [](ServeConfig& c) -> auto& { return c.waiting_served_ratio; },
      "Accepted for TGI compatibility and ignored: Plimsoll admits by KV memory (docs/architecture.md)"));
  t.push_back(row<int64_t>("--block-size", "PLIMSOLL_BLOCK_SIZE", K::kInt, [](ServeConfig& c) -> auto& { return c.engine.block_tokens; },
      "Tokens per KV block", kPlanInput));
  t.push_back(row<DType>("--kv-cache-dtype", "PLIMSOLL_KV_CACHE_DTYPE", K::kDType, [](ServeConfig& c) -> auto& { return c.engine.kv_dtype; },
      "KV cache elements: f16 (half the bytes per token) or f32 (exact)", kPlanInput));
  t.push_back(row<bool>("--prefix-caching", "PLIMSOLL_PREFIX_CACHING", K::kBool, [](ServeConfig& c) -> auto& { return c.engine.prefix_caching; },
      "Share the KV blocks of prompt prefixes between requests and keep them cached while the pool has room "
      "(false: every request computes and holds its whole prompt)", kPlanInput));
  t.push_back(row<int>("--threads", "PLIMSOLL_THREADS", K::kInt, [](ServeConfig& c) -> auto& { return c.engine.threads; },
      "Engine threads (default 0: the cores available)", kPlanInput));
  t.push_back(row<bool>("--huge-pages", "PLIMSOLL_HUGE_PAGES", K::kBool, [](ServeConfig& c) -> auto& { return c.engine.huge_pages; },
      "Read a GGUF/llama2.c model into transparent huge pages (false: mmap the file)"));
  t.push_back(row<int64_t>("--max-request-memory", "PLIMSOLL_MAX_REQUEST_MEMORY", K::kBytes, [](ServeConfig& c) -> auto& { return c.engine.request_budget_bytes; },
      "Request memory in flight (prompts, stops, bookkeeping, responses), e.g. 256Mi; beyond it: 429 "
      "(default 0: half of what the plan leaves for KV, up to 64Mi, or 256 B x max-total-tokens x "
      "max-concurrent-requests when more)", kPlanInput));
  t.push_back(row<int64_t>("--grammar-cache-memory", "PLIMSOLL_GRAMMAR_CACHE_MEMORY", K::kBytes, [](ServeConfig& c) -> auto& { return c.engine.grammar_cache_bytes; },
      "Compiled grammars (JSON schema, regex, tool calls) shared by every request that sends the same one; "
      "each is charged its whole lazy budget (~8.5Mi) here, not to its request; unused ones are evicted LRU "
      "(default 32Mi: 3 grammars; 0: none, each request compiles and is charged its own)", kPlanInput));
  t.push_back(row<int>("--http-threads", "PLIMSOLL_HTTP_THREADS", K::kInt, [](ServeConfig& c) -> auto& { return c.api.threads; },
      "HTTP handler workers (a non-streamed generation holds one until it ends; streams hold none)", kPlanInput));
  t.push_back(row<int>("--prep-threads", "PLIMSOLL_PREP_THREADS", K::kInt, [](ServeConfig& c) -> auto& { return c.api.prep_threads; },
      "Threads preparing requests (body parse, validation, chat template, tokenization, grammar compile)"));
  t.push_back(row<int>("--max-concurrent-compiles", "PLIMSOLL_MAX_CONCURRENT_COMPILES", K::kInt, [](ServeConfig& c) -> auto& { return c.api.max_concurrent_compiles; },
      "Grammar compiles (regex, JSON schema, tool calls) running at once, each reserving a 24Mi workspace "
      "from the request memory (--max-request-memory) while it runs; the others wait, within --prep-timeout-ms"));
  t.push_back(row<int>("--prep-queue", "PLIMSOLL_PREP_QUEUE", K::kInt, [](ServeConfig& c) -> auto& { return c.api.prep_queue; },
      "Requests waiting for a preparation thread; beyond: 429"));
  t.push_back(row<int>("--prep-timeout-ms", "PLIMSOLL_PREP_TIMEOUT_MS", K::kInt, [](ServeConfig& c) -> auto& { return c.api.prep_timeout_ms; },
      "Milliseconds a request's preparation may take, its wait for a thread included: past it 422 "
      "(429 when it never started); a client that leaves cancels it at once"));
  t.push_back(row<std::string>("--api-key", "API_KEY", K::kString, [](ServeConfig& c) -> auto& { return c.api.api_key; },
      "Require `Authorization: Bearer KEY` (checked before the body is read)"));
  t.push_back(row<std::string>("--tenants", "PLIMSOLL_TENANTS", K::kString, [](ServeConfig& c) -> auto& { return c.tenants_file; },
      "Tenants file (JSON: names, weights, caps, API key hashes; docs/api.md \"Tenants\"): the engine is shared "
      "by weight between tenants with work waiting, and HTTP workers, preparations, body budget and "
      "connections with a reserve each; its keys are accepted API keys (plan: each tenant's share)",
      kPlanInput));
  t.push_back(row<bool>("--prefix-cache-across-tenants", "PLIMSOLL_PREFIX_CACHE_ACROSS_TENANTS", K::kBool, [](ServeConfig& c) -> auto& { return c.prefix_cache_across_tenants; },
      "One prefix cache for all tenants (default: each tenant's prompts are found by that tenant alone, so "
      "none can learn another's from how fast its own requests start)"));
  t.push_back(row<bool>("--trust-tenant-header", "PLIMSOLL_TRUST_TENANT_HEADER", K::kBool, [](ServeConfig& c) -> auto& { return c.api.trust_tenant_header; },
      "Take a request's tenant from its X-Tenant header when its API key names none (behind a gateway "
      "that sets it; an unknown name is the default tenant)"));
  t.push_back(row<int64_t>("--payload-limit", "PAYLOAD_LIMIT", K::kBytes, [](ServeConfig& c) -> auto& { return c.api.payload_limit_bytes; },
      "Largest request body in bytes (413 before it is read)", kPlanInput));
  t.push_back(row<int64_t>("--max-body-bytes-in-flight", "PLIMSOLL_MAX_BODY_BYTES_IN_FLIGHT", K::kBytes, [](ServeConfig& c) -> auto& { return c.api.max_body_bytes_in_flight; },
      "Budget for request bodies being read and parsed (their bytes as they arrive, their JSON trees as "
      "they are built); when short, the slowest body still arriving is cut, or the requester gets 429 "
      "(0: the larger of 33 x payload-limit and max-connections x 33 x 4 KiB; with --tenants their sum)",
      kPlanInput));
  t.push_back(row<int>("--max-connections", "PLIMSOLL_MAX_CONNECTIONS", K::kInt, [](ServeConfig& c) -> auto& { return c.api.max_connections; },
      "Open connections; at the cap the one reading its request (head or body) longest is closed", kPlanInput));
  t.push_back(row<int64_t>("--max-header-bytes", "PLIMSOLL_MAX_HEADER_BYTES", K::kBytes, [](ServeConfig& c) -> auto& { return c.api.max_header_bytes; },
      "Request line + header fields: 431 beyond", kPlanInput));
  t.push_back(row<int>("--max-header-fields", "PLIMSOLL_MAX_HEADER_FIELDS", K::kInt, [](ServeConfig& c) -> auto& { return c.api.max_header_fields; },
      "Header fields per request: 431 beyond"));
  t.push_back(row<int>("--request-read-timeout", "PLIMSOLL_REQUEST_READ_TIMEOUT", K::kInt, [](ServeConfig& c) -> auto& { return c.api.read_timeout_seconds; },
      "Seconds to receive a request's head and body, in all (not per read); past it the connection is closed"));
  t.push_back(row<int>("--write-timeout", "PLIMSOLL_WRITE_TIMEOUT", K::kInt, [](ServeConfig& c) -> auto& { return c.api.write_timeout_seconds; },
      "Seconds one response write (an SSE batch) may take before the connection is closed"));
  t.push_back(row<int64_t>("--stream-queue-bytes", "PLIMSOLL_STREAM_QUEUE_BYTES", K::kBytes, [](ServeConfig& c) -> auto& { return c.api.stream_queue_bytes; },
      "Events waiting for one stream's reader; a slower reader's stream is cancelled with an error event", kPlanInput));
  t.push_back(row<double>("--graceful-timeout", "PLIMSOLL_GRACEFUL_TIMEOUT", K::kNumber, [](ServeConfig& c) -> auto& { return c.graceful_timeout_seconds; },
      "Seconds requests in flight may take to finish after SIGTERM"));
  t.push_back(row<std::string>("--cors-allow-origin", "CORS_ALLOW_ORIGIN", K::kString, [](ServeConfig& c) -> auto& { return c.api.cors_allow_origin; },
      "Let browsers call the API from these origins (\"*\", or origins separated by commas); default: no CORS"));
  t.push_back(row<std::string>("--model-id", "PLIMSOLL_MODEL_ID", K::kString, [](ServeConfig& c) -> auto& { return c.api.model_id; },
      "Name reported by /info and /v1/models (default: the path or repo id)"));
  // clang-format on
  return t;
}

bool shell_safe(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char ch) {
    return std::isalnum(ch) || std::string_view("_./:=@%+,-").find(static_cast<char>(ch)) != std::string_view::npos;
  });
}

std::string shell_quote(const std::string& s) {
  if (shell_safe(s)) return s;
  std::string q = "'";
  for (char ch : s) {
    if (ch == '\'') q += "'\\''";
    else q += ch;
  }
  q += '\'';
  return q;
}

}  // namespace

std::string ServeSetting::flag() const { return flags().back(); }

std::vector<std::string> ServeSetting::flags() const {
  std::vector<std::string> out;
  for (size_t start = 0; start <= names.size();) {
    const size_t comma = std::min(names.find(',', start), names.size());
    out.push_back(names.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

const std::vector<ServeSetting>& serve_settings() {
  static const std::vector<ServeSetting> table = make_table();
  return table;
}

const ServeSetting* find_serve_setting_by_flag(const std::string& flag) {
  for (const ServeSetting& s : serve_settings()) {
    for (const std::string& name : s.flags()) {
      if (name == flag) return &s;
    }
  }
  return nullptr;
}

const ServeSetting* find_serve_setting_by_env(const std::string& env) {
  if (env.empty()) return nullptr;
  for (const ServeSetting& s : serve_settings()) {
    if (s.env == env) return &s;
  }
  return nullptr;
}

Status write_serve_setting(const ServeSetting& row, ServeConfig& config, const std::string& what,
                           const std::string& text) {
  Status st = row.write(config, text);
  if (!st.ok()) return st.error().with_context(what);
  return {};
}

std::vector<std::string> render_serve_args(const ServeConfig& config, bool only_in_plan) {
  static const ServeConfig defaults;
  std::vector<std::string> args;
  for (const ServeSetting& s : serve_settings()) {
    if (only_in_plan && !s.in_plan) continue;
    const std::string value = s.read(config);
    if (value.empty() || (!s.changes_plan && value == s.read(defaults))) continue;
    if (s.kind == SettingKind::kSwitch) {
      if (value == "true") args.push_back(s.flag());
      continue;
    }
    args.push_back(s.flag());
    args.push_back(value);
  }
  return args;
}

std::string render_serve_command(const ServeConfig& config) {
  std::string s = "plimsoll serve";
  for (const std::string& a : render_serve_args(config)) {
    s += ' ';
    s += shell_quote(a);
  }
  return s;
}

}  // namespace plimsoll
