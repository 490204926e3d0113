// A fake TGI/OpenAI server for the client tests: httplib::Server on 127.0.0.1
// (ephemeral port) whose answers, delays, 429s and 422s each test scripts.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace plimsoll::testing {

class FakeServer {
 public:
  // Routes are added before the server starts (httplib is not safe otherwise).
  // port 0: an ephemeral one; else that port (a server coming back).
  explicit FakeServer(const std::function<void(httplib::Server&)>& routes, int port = 0)
      : FakeServer(std::make_unique<httplib::Server>(), "http", routes, port) {}
  // Any httplib server (an httplib::SSLServer with "https").
  FakeServer(std::unique_ptr<httplib::Server> server, std::string scheme,
             const std::function<void(httplib::Server&)>& routes, int port = 0)
      : server_(std::move(server)), scheme_(std::move(scheme)) {
    routes(*server_);
    port_ = port == 0 ? server_->bind_to_any_port("127.0.0.1")
                      : (server_->bind_to_port("127.0.0.1", port) ? port : -1);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // stop() does nothing before listening starts: wait for it.
    while (port_ > 0 && !server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    server_->stop();
    thread_.join();
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return scheme_ + "://127.0.0.1:" + std::to_string(port_); }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::string scheme_;
  int port_ = -1;
  std::thread thread_;
};

// What a scripted /generate saw, and how it should answer.
struct TgiScript {
  nlohmann::json info = {{"model_id", "fake"}, {"max_client_batch_size", 0}, {"safe_client_batch_size", 4}};
  int delay_ms = 0;          // per request
  int random_delay_ms = 0;   // plus up to this much, to reorder completions
  // Before answering: return a status to refuse the request (0 = answer).
  std::function<int(const std::vector<std::string>& inputs, httplib::Response& res)> refuse;

  std::mutex mutex;
  std::vector<std::vector<std::string>> requests;  // inputs of each request, in arrival order
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
};

inline std::string echo(const std::string& prompt) { return "echo:" + prompt; }

inline void set_error(httplib::Response& res, int status, const std::string& type, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"error", message}, {"error_type", type}}.dump(), "application/json");
}

// GET /info and POST /generate answering echo(input) per input, as TGI does.
inline void add_tgi_routes(httplib::Server& server, TgiScript& script) {
  server.Get("/info", [&script](const httplib::Request&, httplib::Response& res) {
    res.set_content(script.info.dump(), "application/json");
  });
  server.Post("/generate", [&script](const httplib::Request& req, httplib::Response& res) {
    nlohmann::json body = nlohmann::json::parse(req.body);
    const bool list = body["inputs"].is_array();
    std::vector<std::string> inputs;
    if (list) inputs = body["inputs"].get<std::vector<std::string>>();
    else inputs.push_back(body["inputs"].get<std::string>());
    {
      std::lock_guard<std::mutex> lock(script.mutex);
      script.requests.push_back(inputs);
      script.arrivals.push_back(std::chrono::steady_clock::now());
    }
    const int now = ++script.in_flight;
    for (int seen = script.max_in_flight.load(); now > seen && !script.max_in_flight.compare_exchange_weak(seen, now);) {
    }
    int delay = script.delay_ms;
    if (script.random_delay_ms > 0) delay += static_cast<int>(std::hash<std::string>{}(inputs.front()) % script.random_delay_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    --script.in_flight;
    if (script.refuse && script.refuse(inputs, res) != 0) return;
    nlohmann::json out = nlohmann::json::array();
    for (const std::string& input : inputs) {
      out.push_back({{"generated_text", echo(input)}, {"details", {{"finish_reason", "length"}, {"generated_tokens", 3}}}});
    }
    res.set_header("x-generated-tokens", std::to_string(3 * inputs.size()));
    res.set_content((list ? out : out[0]).dump(), "application/json");
  });
}

}  // namespace plimsoll::testing
