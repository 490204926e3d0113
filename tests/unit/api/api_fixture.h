// ApiTest: a real ApiServer on 127.0.0.1 (ephemeral port) over a FakeService
// and a tokenizer built from a synthetic byte-fallback vocabulary.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "api/api_server.h"
#include "fake_service.h"
#include "metrics/registry.h"
#include "metrics/server_metrics.h"

namespace plimsoll::testing {

using nlohmann::json;

// <unk> <s> </s>, 256 byte tokens, then "▁" and a..z (one token per letter).
inline Tokenizer synthetic_tokenizer() {
  Vocab v;
  auto add = [&](std::string piece, TokenType type) {
    v.pieces.push_back(std::move(piece));
    v.scores.push_back(0.0f);
    v.types.push_back(type);
  };
  add("<unk>", TokenType::kUnknown);
  add("<s>", TokenType::kControl);
  add("</s>", TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    add(name, TokenType::kByte);
  }
  add("\xE2\x96\x81", TokenType::kNormal);
  for (char c = 'a'; c <= 'z'; ++c) add(std::string(1, c), TokenType::kNormal);
  Result<Tokenizer> t = Tokenizer::create(std::move(v));
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

class ApiTest : public ::testing::Test {
 protected:
  ApiTest() : tokenizer_(synthetic_tokenizer()), service_(tokenizer_), metrics_(registry_) {}

  void SetUp() override { start({}); }
  void TearDown() override { stop(); }

  void start(std::function<void(api::ApiConfig&)> tweak) {
    api::ApiConfig config;
    config.hostname = "127.0.0.1";
    config.port = 0;
    config.threads = 16;
    config.default_max_new_tokens = 5;
    config.sse_keepalive_ms = 200;
    if (tweak) tweak(config);
    server_ = std::make_unique<api::ApiServer>(config, service_, tokenizer_, metrics_);
    ASSERT_TRUE(server_->start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }
  void restart(std::function<void(api::ApiConfig&)> tweak) {
    stop();
    start(std::move(tweak));
  }
  void stop() {
    client_.reset();
    server_.reset();
  }

  httplib::Result post(const std::string& path, const std::string& body,
                       const httplib::Headers& headers = {}) {
    return client_->Post(path.c_str(), headers, body, "application/json");
  }
  httplib::Result post(const std::string& path, const json& body) { return post(path, body.dump()); }

  static json body_json(const httplib::Result& r) { return json::parse(r->body); }
  static void expect_error(const httplib::Result& r, int status, const std::string& type,
                           const std::string& message_part) {
    ASSERT_TRUE(r) << "no response";
    EXPECT_EQ(r->status, status) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    json b = json::parse(r->body);
    EXPECT_EQ(b["error_type"], type) << r->body;
    EXPECT_NE(b["error"].get<std::string>().find(message_part), std::string::npos) << r->body;
    EXPECT_EQ(b.size(), 2u) << r->body;
  }

  // OpenAI's error object on /v1 routes: {"error":{"message","type","param","code"}}.
  static void expect_openai_error(const httplib::Result& r, int status, const std::string& type,
                                  const std::string& message_part, const json& param = nullptr) {
    ASSERT_TRUE(r) << "no response";
    EXPECT_EQ(r->status, status) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    json b = json::parse(r->body);
    ASSERT_EQ(b.size(), 1u) << r->body;
    ASSERT_TRUE(b["error"].is_object()) << r->body;
    const json& e = b["error"];
    EXPECT_EQ(e.size(), 4u) << r->body;
    EXPECT_EQ(e["type"], type) << r->body;
    EXPECT_NE(e["message"].get<std::string>().find(message_part), std::string::npos) << r->body;
    EXPECT_TRUE(e.contains("code")) << r->body;
    if (!param.is_null()) {
      EXPECT_EQ(e["param"], param) << r->body;
    }
  }

  // The JSON payloads of a TGI or OpenAI event stream, in order.
  static std::vector<std::string> sse_data(const std::string& body, const std::string& prefix) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < body.size()) {
      size_t end = body.find("\n\n", pos);
      if (end == std::string::npos) {
        ADD_FAILURE() << "unterminated SSE frame: " << body.substr(pos);
        break;
      }
      std::string frame = body.substr(pos, end - pos);
      pos = end + 2;
      if (frame.starts_with(":")) continue;  // keep-alive comment
      EXPECT_TRUE(frame.starts_with(prefix)) << frame;
      out.push_back(frame.substr(prefix.size()));
    }
    return out;
  }

  Tokenizer tokenizer_;
  FakeService service_;
  metrics::MetricsRegistry registry_;
  metrics::ServerMetrics metrics_;
  std::unique_ptr<api::ApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace plimsoll::testing
