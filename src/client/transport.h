// Transport: HTTP to one server over a pool of keep-alive connections (one per
// concurrent caller), with timeouts and the API key; private to the library.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "client/client_error.h"
#include "client/types.h"
#include "client/wire.h"

namespace httplib {
class Client;
}

namespace plimsoll::client {

class Transport {
 public:
  Transport(std::string base_url, ClientOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  ClientResult<wire::HttpReply> get(const std::string& path);
  ClientResult<wire::HttpReply> post_json(const std::string& path, const std::string& body);
  // POST with the answer's body delivered as it arrives when the status is 2xx
  // (on_bytes returns false to stop); other answers come back whole in the reply.
  ClientResult<wire::HttpReply> post_stream(const std::string& path, const std::string& body,
                                            const std::function<bool(std::string_view)>& on_bytes);

 private:
  std::unique_ptr<httplib::Client> acquire();
  void release(std::unique_ptr<httplib::Client> connection);

  std::string base_url_;
  ClientOptions options_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<httplib::Client>> idle_;
};

}  // namespace plimsoll::client
