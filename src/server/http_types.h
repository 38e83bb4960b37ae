// What the HTTP transport (http_server.cpp, Boost.Beast) and the API routes share,
// without Beast's headers: a parsed request, a complete response, and a Responder
// through which a handler answers, at once or later, as one body or as a stream.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::server {

struct HttpRequest {
  std::string method;                                        // "GET", "POST", ...
  std::string target;                                        // path and query as sent
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;
  std::string remote;     // peer address, for the access log
  double received_s = 0;  // steady-clock seconds when the request was read
  // Non-zero when the transport refused the request before the routes (413: body too
  // large, 400: malformed HTTP); the handler still answers it, so it is logged and
  // counted like any other, and the connection closes afterwards.
  int rejected = 0;

  std::string path() const { return target.substr(0, target.find('?')); }
  // The first header named `lower_name` (lower case), or "" if absent.
  std::string_view header(std::string_view lower_name) const {
    for (const auto& [k, v] : headers) {
      if (k == lower_name) return v;
    }
    return {};
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Allow, ...)
};

// One request's answer channel. Every method may be called from any thread: each
// posts its work to the connection's strand, so calls are applied in order and never
// race the connection's own reads and writes.
class Responder {
 public:
  virtual ~Responder() = default;

  // A complete response; ends the exchange.
  virtual void send(HttpResponse response) = 0;
  // A streamed (chunked) response: head, any number of writes, then finish().
  virtual void start_stream(int status, std::string content_type) = 0;
  virtual void write(std::string data) = 0;
  virtual void finish() = 0;

  // Runs `fn` on the connection's strand, after the calls already made.
  virtual void post(std::function<void()> fn) = 0;
  // `fn` runs once on the strand if the client goes away before the exchange ends
  // (at once, posted, if it already has).
  virtual void on_disconnect(std::function<void()> fn) = 0;
};

using HttpHandler = std::function<void(HttpRequest, std::shared_ptr<Responder>)>;

}  // namespace strata::server
