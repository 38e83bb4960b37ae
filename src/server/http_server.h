// The HTTP/1.1 transport: a Boost.Beast listener and keep-alive sessions on one Asio
// I/O pool. It parses requests (enforcing header and body limits), hands each to the
// HttpHandler with a Responder, writes complete or chunked (streamed) responses, and
// notices clients that go away mid-response. Beast stays inside http_server.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "server/http_types.h"

namespace strata::server {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;               // 0 = any free port (see HttpServer::port())
  uint64_t max_body_bytes = 8 << 20;  // larger bodies are answered 413
  uint32_t max_header_bytes = 64 << 10;
  int io_threads = 2;
  double idle_timeout_s = 60;  // keep-alive connections idle longer are closed
};

class HttpServer {
 public:
  // Binds and listens now (throws strata::Error naming host and port on failure).
  HttpServer(const HttpServerConfig& config, HttpHandler handler);
  ~HttpServer();  // stops the pool and drops open connections
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;       // the bound port
  void start();                // runs the I/O threads
  void stop_accepting();       // closes the listening socket; open connections carry on
  size_t busy() const;         // exchanges whose response is not fully written yet
  uint64_t exchanges() const;  // requests handed to the handler so far
  void stop();                 // stops the I/O threads; idempotent

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
