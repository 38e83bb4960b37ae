// HTTP/1.1 to the benchmarked server (Boost.Beast; plain http:// only). Boost stays in
// http_client.cpp:
//   HttpClient  blocking requests on one keep-alive connection, for setup calls
//               (/v1/models, /tokenize, /detokenize)
//   EventLoop   one thread running timers and streamed POSTs, one connection per
//               request; handlers run on that thread the moment bytes arrive, so
//               timestamps taken in them are client-side arrival times
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace strata::loadgen {

struct Url {
  std::string host;
  std::string port;
  std::string base_path;  // "" or "/prefix" (no trailing slash), put before every path
};

// "http://HOST[:PORT][/PREFIX]"; throws strata::Error naming --base-url otherwise.
Url parse_base_url(const std::string& text);

struct HttpResponse {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  HttpClient(Url url, std::string api_key, double timeout_s);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Throw strata::Error when the server cannot be reached or the exchange breaks.
  HttpResponse get(const std::string& path);
  HttpResponse post_json(const std::string& path, const std::string& body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What happens to one streamed request, in order: on_head once the status line and
// headers arrived (not called when that fails), on_data for each piece of the
// (de-chunked) body as it arrives, then on_end exactly once: with an empty string when
// the response ended normally, else the transport error.
struct StreamHandler {
  std::function<void(int status)> on_head;
  std::function<void(std::string_view bytes)> on_data;
  std::function<void(const std::string& error)> on_end;
};

class EventLoop {
 public:
  // `timeout_s`: longest wait for the connection, the request write or the next bytes.
  EventLoop(Url url, std::string api_key, double timeout_s);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  void post_stream(const std::string& path, std::string body, StreamHandler handler);
  void after(double seconds, std::function<void()> fn);  // a timer; 0 = soon
  void run();            // runs handlers until no request or timer is left
  double now_s() const;  // steady clock, seconds

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::loadgen
