// The route table, the route edge (the single catch-all), the key check and
// small helpers shared by the route files.
#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "api/route_context.h"
#include "core/sha256.h"

namespace plimsoll::api {
namespace {

// Compares without an early exit, so timing does not reveal the key.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % (b.empty() ? 1 : b.size())];
  return diff == 0 && !b.empty();
}

void answer(RouteContext& ctx, const HttpRequest& req, HttpResponse& res, const ApiError& error) {
  ctx.metrics.failure(error.error_type).inc();
  res.stream.reset();
  res.headers = {};
  send_error(res, error, error_wire_for_path(req.path));
}

}  // namespace

void RouteTable::get(std::string path, Access access, Handler handler, Runs runs) {
  routes_.push_back(Route{"GET", std::move(path), false, access, runs, std::move(handler)});
}

void RouteTable::post(std::string path, Access access, Handler handler, Runs runs) {
  routes_.push_back(Route{"POST", std::move(path), false, access, runs, std::move(handler)});
}

void RouteTable::get_under(std::string prefix, Access access, Handler handler) {
  routes_.push_back(Route{"GET", std::move(prefix), true, access, Runs::kWorker, std::move(handler)});
}

const Route* RouteTable::find(std::string_view method, std::string_view path) const {
  for (const Route& r : routes_) {
    if (r.method == method && !r.under && r.path == path) return &r;
  }
  for (const Route& r : routes_) {
    if (r.method == method && r.under && path.size() > r.path.size() && path.starts_with(r.path)) return &r;
  }
  return nullptr;
}

namespace {

// The tenant whose key the request's `Authorization: Bearer` carries, or -1.
int32_t key_tenant(const ApiConfig& config, const HttpRequest& req) {
  if (config.tenant_key_sha256.empty()) return -1;
  const std::string auth = req.header("Authorization");
  if (!auth.starts_with("Bearer ")) return -1;
  const std::string hash = sha256_hex(auth.substr(7));
  int32_t found = -1;
  for (const auto& [key_hash, tenant] : config.tenant_key_sha256) {
    if (same_secret(hash, key_hash)) found = tenant;  // (no early exit: the time does not tell which)
  }
  return found;
}

}  // namespace

bool authorized(const ApiConfig& config, const HttpRequest& req) {
  if (config.api_key.empty() && config.tenant_key_sha256.empty()) return true;
  if (!config.api_key.empty() && same_secret(req.header("Authorization"), "Bearer " + config.api_key)) return true;
  return key_tenant(config, req) >= 0;
}

int32_t request_tenant(const ApiConfig& config, const HttpRequest& req) {
  if (req.tenant >= 0) return req.tenant;
  if (const int32_t t = key_tenant(config, req); t >= 0) return t;
  if (config.trust_tenant_header) {
    const std::string name = req.header("X-Tenant");
    for (size_t t = 0; t < config.tenant_names.size(); ++t) {
      if (config.tenant_names[t] == name) return static_cast<int32_t>(t);
    }
  }
  return 0;
}

std::string RouteContext::model_id() const {
  return config.model_id.empty() ? service.limits().model_id : config.model_id;
}

Status prepare(RouteContext& ctx, const HttpRequest& req, const std::function<Status()>& fn) {
  if (!ctx.prep) return fn();
  return ctx.prep->run(fn, req.client_gone.get(), request_tenant(ctx.config, req));
}

void send_json(HttpResponse& res, const std::string& body) {
  res.status = 200;
  res.set_content(body, "application/json");
}

Handler route_edge(RouteContext& ctx, Handler handler) {
  return [&ctx, handler = std::move(handler)](HttpRequest& req, HttpResponse& res) {
    try {
      handler(req, res);
    } catch (const nlohmann::json::exception& e) {
      answer(ctx, req, res, validation_error(e.what()));
    } catch (const std::exception& e) {
      answer(ctx, req, res, ApiError{500, "internal", e.what()});
    }
  };
}

}  // namespace plimsoll::api
