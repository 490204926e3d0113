// The listening socket's accept loop, shared by the API server and the webhook: every
// accepted socket goes to on_socket on a strand of its own; a failed accept (out of file
// descriptors, say) is retried after kAcceptRetry instead of ending the loop. The loop
// stops when the acceptor is closed. ioc, acceptor and retry must outlive it.
#pragma once

#include <spdlog/spdlog.h>

#include <boost/asio.hpp>
#include <chrono>
#include <string_view>
#include <utility>

namespace plimsoll::api {

inline constexpr std::chrono::milliseconds kAcceptRetry{50};

// log_prefix: "" or "webhook: ", put before "accept failed: ...".
template <class OnSocket>
void accept_loop(boost::asio::io_context& ioc, boost::asio::ip::tcp::acceptor& acceptor,
                 boost::asio::steady_timer& retry, std::string_view log_prefix, OnSocket on_socket) {
  acceptor.async_accept(boost::asio::make_strand(ioc), [&ioc, &acceptor, &retry, log_prefix, on_socket](
                                                            boost::system::error_code ec,
                                                            boost::asio::ip::tcp::socket socket) mutable {
    if (!acceptor.is_open()) return;
    if (ec) {
      spdlog::warn("{}accept failed: {}", log_prefix, ec.message());
      retry.expires_after(kAcceptRetry);
      retry.async_wait([&ioc, &acceptor, &retry, log_prefix, on_socket](boost::system::error_code) {
        accept_loop(ioc, acceptor, retry, log_prefix, on_socket);
      });
      return;
    }
    on_socket(std::move(socket));
    accept_loop(ioc, acceptor, retry, log_prefix, on_socket);
  });
}

}  // namespace plimsoll::api
