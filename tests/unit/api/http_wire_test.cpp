// The bytes Beast's serializer writes for the routes' responses: the exact
// framing clients rely on (status line, field order and spelling, Connection,
// Content-Length, chunked SSE framing).
#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/chunk_encode.hpp>

#include "api/http_wire.h"

namespace plimsoll::api {
namespace {

HttpResponse json_response(int status, std::string body) {
  HttpResponse res;
  res.status = status;
  res.set_content(std::move(body), "application/json");
  return res;
}

TEST(HttpWire, WholeResponseKeepAlive) {
  HttpResponse res = json_response(200, "{\"a\":1}");
  res.set_header("x-request-id", "r1");
  EXPECT_EQ(serialize_response(res, 11, true),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nx-request-id: r1\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
  EXPECT_TRUE(res.body.empty());
}

TEST(HttpWire, ErrorWithRetryAfterAndClose) {
  HttpResponse res = json_response(503, "{}");
  res.set_header("Retry-After", "1");
  EXPECT_EQ(serialize_response(res, 11, false),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            "Connection: close\r\nContent-Length: 2\r\n\r\n{}");
}

TEST(HttpWire, Http10SaysKeepAliveOrClose) {
  HttpResponse res = json_response(404, "x");
  EXPECT_EQ(serialize_response(res, 10, true),
            "HTTP/1.0 404 Not Found\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
            "Content-Length: 1\r\n\r\nx");
  res = json_response(404, "x");
  EXPECT_EQ(serialize_response(res, 10, false),
            "HTTP/1.0 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n"
            "Content-Length: 1\r\n\r\nx");
}

TEST(HttpWire, NoContentHasNoLengthAndNoType) {
  HttpResponse res;
  res.status = 204;
  res.set_header("Access-Control-Allow-Origin", "*");
  EXPECT_EQ(serialize_response(res, 11, true), "HTTP/1.1 204 No Content\r\nAccess-Control-Allow-Origin: *\r\n\r\n");
}

TEST(HttpWire, StreamHeadIsChunkedOnHttp11Only) {
  HttpResponse res;
  res.content_type = "text/event-stream";
  res.set_header("Cache-Control", "no-cache");
  EXPECT_EQ(stream_head(res, 11, true),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(stream_head(res, 10, false),
            "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n");
}

TEST(HttpWire, Chunks) {
  EXPECT_EQ(chunk("data: {}\n\n"), "a\r\ndata: {}\n\n\r\n");
  EXPECT_EQ(chunk(std::string(300, 'x')), "12c\r\n" + std::string(300, 'x') + "\r\n");
  EXPECT_EQ(chunk(""), "");
  EXPECT_EQ(chunk("", true), "0\r\n\r\n");
  EXPECT_EQ(chunk("ab", true), "2\r\nab\r\n0\r\n\r\n");
}

// chunk() is written by hand for speed: the same bytes as Beast's make_chunk.
TEST(HttpWire, ChunksAreBeastsChunks) {
  namespace net = boost::asio;
  namespace http = boost::beast::http;
  auto bytes = [](const auto& buffers) {
    std::string out(net::buffer_size(buffers), '\0');
    net::buffer_copy(net::buffer(out), buffers);
    return out;
  };
  for (size_t n : {1, 9, 10, 15, 16, 255, 256, 4095, 4096, 65537}) {
    const std::string data(n, 'd');
    EXPECT_EQ(chunk(data), bytes(http::make_chunk(net::buffer(data)))) << n;
  }
  EXPECT_EQ(chunk("", true), bytes(http::make_chunk_last()));
}

}  // namespace
}  // namespace plimsoll::api
