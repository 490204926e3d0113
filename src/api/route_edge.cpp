// The route edge (auth + the single catch-all) and small helpers shared by
// the route files.
#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "api/route_context.h"

namespace plimsoll::api {
namespace {

// Compares without an early exit, so timing does not reveal the key.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % (b.empty() ? 1 : b.size())];
  return diff == 0 && !b.empty();
}

bool authorized(const ApiConfig& config, const httplib::Request& req) {
  if (config.api_key.empty()) return true;
  return same_secret(req.get_header_value("Authorization"), "Bearer " + config.api_key);
}

void answer(RouteContext& ctx, httplib::Response& res, const ApiError& error) {
  ctx.metrics.failure(error.error_type).inc();
  send_error(res, error);
}

}  // namespace

std::string RouteContext::model_id() const {
  return config.model_id.empty() ? service.limits().model_id : config.model_id;
}

void send_json(httplib::Response& res, const std::string& body) {
  res.status = 200;
  res.set_content(body, "application/json");
}

httplib::Server::Handler route_edge(RouteContext& ctx, bool needs_auth,
                                    httplib::Server::Handler handler) {
  return [&ctx, needs_auth, handler = std::move(handler)](const httplib::Request& req,
                                                          httplib::Response& res) {
    if (needs_auth && !authorized(ctx.config, req)) {
      send_error(res, ApiError{401, "unauthorized", "missing or wrong `Authorization: Bearer` key"});
      return;
    }
    try {
      handler(req, res);
    } catch (const nlohmann::json::exception& e) {
      answer(ctx, res, validation_error(e.what()));
    } catch (const std::exception& e) {
      answer(ctx, res, ApiError{500, "internal", e.what()});
    }
  };
}

}  // namespace plimsoll::api
