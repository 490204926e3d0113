// Routes that do not generate: GET /health, /info, /metrics, /v1/models[/{id}] and
// POST /tokenize.
#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "api/field_reader.h"
#include "api/json_text.h"
#include "api/request_recorder.h"
#include "api/request_json.h"
#include "api/route_context.h"
#include "api/tokenize.h"
#include "sched/request_cost.h"

#ifndef PLIMSOLL_VERSION
#define PLIMSOLL_VERSION "0.0.0"
#endif

namespace plimsoll::api {
namespace {

json info_json(const RouteContext& ctx) {
  sched::ServiceLimits l = ctx.service.limits();
  return {{"model_id", ctx.model_id()},
          {"model_sha", nullptr},
          {"model_dtype", l.model_dtype},
          {"model_device_type", "cpu"},
          {"model_pipeline_tag", "text-generation"},
          {"max_concurrent_requests", l.max_concurrent_requests},
          {"max_best_of", l.max_best_of},
          {"max_stop_sequences", l.max_stop_sequences},
          {"max_input_tokens", l.max_input_tokens},
          {"max_input_length", l.max_input_tokens},  // TGI 1.x spelling
          {"max_total_tokens", l.max_total_tokens},
          {"max_batch_total_tokens", l.max_batch_total_tokens},
          {"max_batch_prefill_tokens", l.max_batch_prefill_tokens},
          {"max_batch_size", l.max_batch_size},
          {"max_client_batch_size", l.max_client_batch_size},
          {"max_top_n_tokens", l.max_top_n_tokens},
          {"max_queued_tokens", l.max_queued_tokens},
          {"safe_client_batch_size", l.safe_client_batch_size},
          {"vocab_size", l.vocab_size},
          {"prefix_caching", l.prefix_caching},
          {"router", "plimsoll"},
          {"version", PLIMSOLL_VERSION},
          {"sha", nullptr},
          {"docker_label", nullptr}};
}

void refresh_load_gauges(RouteContext& ctx) {
  sched::ServiceStats s = ctx.service.stats();
  metrics::ServerMetrics& m = ctx.metrics;
  m.queue_size.set(double(s.queued_requests));
  m.batch_current_size.set(double(s.batch_current_size));
  m.batch_current_max_tokens.set(double(s.batch_current_max_tokens));
  m.batch_max_total_tokens.set(double(ctx.service.limits().max_batch_total_tokens));
  m.kv_blocks_capacity.set(double(s.kv_blocks_total));
  m.kv_blocks_used.set(double(s.kv_blocks_used));
  m.preemptions_total.advance_to(double(s.preemptions_total));
  m.recomputed_tokens_total.advance_to(double(s.recomputed_tokens_total));
  m.engine_faults_total.advance_to(double(s.engine_faults_total));
  m.num_requests_waiting.set(double(s.queued_requests));
  m.num_requests_running.set(double(s.running_requests));
  m.kv_cache_usage_perc.set(s.admission_fill);
  if (ctx.scrape_hook) ctx.scrape_hook();
}

// 200 with an empty body, or TGI's 503 {"error":"unhealthy","error_type":"healthcheck"}.
void health(RouteContext& ctx, HttpResponse& res) {
  if (ctx.service.ready() && !ctx.stopping.load()) {
    res.status = 200;
    return;
  }
  send_error(res, ApiError{503, "healthcheck", "unhealthy"});
}

// Tokenizes on the preparation stage (its cost reserved first); `out` is the
// answer, `rejected` admission's refusal of the reservation.
Status tokenize_prepared(RouteContext& ctx, HttpRequest& req, std::string* out,
                         std::optional<sched::Rejection>* rejected) {
  PLIMSOLL_ASSIGN(json body, parse_request_json(req.body, req.body_reservation));
  Result<std::optional<std::string>> inputs = FieldReader(body).string("inputs");
  release_json(body);
  req.release_body();
  if (!inputs) return inputs.error();
  if (!*inputs) return make_error(ErrorCode::kInvalidArgument, "`inputs` is required");
  const std::string& text = **inputs;
  // Ids, spans and one JSON record per token, charged before tokenizing.
  sched::CostModel cost;
  cost.token_text_bytes = ctx.tokenizer.max_token_bytes();
  const sched::ByteReservation hold = ctx.service.reserve_bytes(
      sched::tokenize_cost_bytes(static_cast<int64_t>(text.size()), cost), "tokenizing " + std::to_string(text.size()) + " bytes",
      sched::BackstopCheck::kNow);
  if (!hold.ok()) {
    count_rejection(ctx.metrics, *hold.rejection);
    *rejected = *hold.rejection;
    return {};
  }
  std::vector<int32_t> ids = ctx.tokenizer.encode(text, ctx.tokenizer.add_special_by_default());
  json records = json::array();
  for (const TokenSpan& s : token_spans(ctx.tokenizer, text, ids)) {
    records.push_back({{"id", s.id}, {"text", text.substr(s.start, s.stop - s.start)},
                       {"start", s.start}, {"stop", s.stop}});
  }
  *out = dump_json(records);
  return {};
}

void tokenize(RouteContext& ctx, HttpRequest& req, HttpResponse& res) {
  std::string out;
  std::optional<sched::Rejection> rejected;
  const Status s = prepare(ctx, req, [&] { return tokenize_prepared(ctx, req, &out, &rejected); });
  if (!s.ok()) return send_error(res, api_error(s.error()));
  if (rejected) return send_error(res, api_error(*rejected));
  send_json(res, out);
}

json model_json(const RouteContext& ctx) {
  return {{"id", ctx.model_id()}, {"object", "model"}, {"created", 0}, {"owned_by", "plimsoll"}};
}

json models_json(const RouteContext& ctx) { return {{"object", "list"}, {"data", json::array({model_json(ctx)})}}; }

// %XX escapes decoded (a model id such as "org/name" may come as "org%2Fname").
std::string percent_decoded(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// GET /v1/models/{id}: the served model, or OpenAI's 404 model_not_found.
void retrieve_model(RouteContext& ctx, const HttpRequest& req, HttpResponse& res) {
  constexpr std::string_view kPrefix = "/v1/models/";
  const std::string id = percent_decoded(std::string_view(req.path).substr(kPrefix.size()));
  if (id != ctx.model_id()) {
    ApiError e{404, "not_found", "The model `" + id + "` does not exist; this server serves `" + ctx.model_id() + "`"};
    e.code = "model_not_found";
    return send_error(res, e, ErrorWire::kOpenAi);
  }
  send_json(res, dump_json(model_json(ctx)));
}

}  // namespace

// /health, /info and /metrics run inline on the I/O thread: they answer
// while every worker is busy.
void add_info_routes(RouteTable& routes, RouteContext& ctx) {
  routes.get("/health", Access::kOpen, route_edge(ctx, [&ctx](HttpRequest&, HttpResponse& res) {
    health(ctx, res);
  }), Runs::kInline);
  routes.get("/info", Access::kOpen, route_edge(ctx, [&ctx](HttpRequest&, HttpResponse& res) {
    send_json(res, dump_json(info_json(ctx)));
  }), Runs::kInline);
  routes.get("/metrics", Access::kOpen, route_edge(ctx, [&ctx](HttpRequest&, HttpResponse& res) {
    refresh_load_gauges(ctx);
    res.set_content(ctx.metrics.registry.render(), metrics::MetricsRegistry::kContentType);
  }), Runs::kInline);
  routes.get("/v1/models", Access::kOpen, route_edge(ctx, [&ctx](HttpRequest&, HttpResponse& res) {
    send_json(res, dump_json(models_json(ctx)));
  }));
  routes.get_under("/v1/models/", Access::kOpen, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    retrieve_model(ctx, req, res);
  }));
  routes.post("/tokenize", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    tokenize(ctx, req, res);
  }));
}

}  // namespace plimsoll::api
