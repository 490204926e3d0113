// One webhook connection over Boost.Beast and asio's SSL: the TLS handshake
// (the certificate comes from the context's cert callback), then requests
// read whole under a deadline and a body limit, answered from the route table
// (src/api's RouteTable and HttpRequest/HttpResponse, serialized by http_wire).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <cstdint>

#include "api/route_context.h"

namespace plimsoll::webhook {

// What every webhook session shares; owned by the server, outlives the sessions.
struct SessionShared {
  boost::asio::ssl::context& tls;
  const api::RouteTable& routes;
  int64_t payload_limit_bytes;
  int read_timeout_seconds;       // the handshake, and each request's head and body
  int write_timeout_seconds;      // each response
  std::atomic<int> active{0};     // requests read whose response is not yet written
};

// Serves one accepted socket (its executor a strand) until the peer leaves,
// a deadline passes, or the server stops.
void serve_tls_connection(boost::asio::ip::tcp::socket socket, SessionShared& shared);

}  // namespace plimsoll::webhook
