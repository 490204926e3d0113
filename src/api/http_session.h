// The Boost.Beast transport: one Session per accepted connection. Sessions
// read heads and bodies on the I/O threads (async, one strand each), enforce
// the transport limits (ApiConfig; docs/reliability.md) before any body byte
// is read, run handlers inline (Runs::kInline) or on the bounded WorkerPool,
// and write responses and SSE streams with a write deadline.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <memory>

#include "api/body_budget.h"
#include "api/connection_registry.h"
#include "api/route_context.h"
#include "api/tenant_shares.h"
#include "api/worker_pool.h"

namespace plimsoll::api {

// What every session shares; owned by ApiServer, outlives every session.
struct Transport {
  const ApiConfig& config;
  RouteContext& ctx;
  const RouteTable& routes;
  WorkerPool& workers;
  std::shared_ptr<BodyBudget> budget;
  ConnectionRegistry& connections;
  const TenantSet& tenants;
  TenantRefusals& refusals;  // per tenant: requests refused for its share of the above
  std::atomic<int> active_requests{0};  // heads accepted whose response is not yet written
};

// Serves one accepted socket (its executor a strand); refuses it with 503
// when the connection cap is reached and no open connection can be evicted.
void serve_connection(boost::asio::ip::tcp::socket socket, Transport& transport);

}  // namespace plimsoll::api
