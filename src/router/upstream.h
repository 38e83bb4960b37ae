// One blocking HTTP/1.1 exchange with a replica (Boost.Beast stays in upstream.cpp),
// run on the router's worker thread for that request. The body is handed over piece by
// piece as it arrives (de-chunked), so a stream is relayed without buffering. Every
// step has a deadline: connect, write, the response head, and each gap between pieces.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::router {

struct UpstreamTimeouts {
  double connect_s = 2;
  double first_byte_s = 300;  // a long prefill may precede the head
  double idle_s = 60;         // longest gap between body pieces
};

struct UpstreamHead {
  int status = 0;
  std::string content_type;
};

enum class UpstreamFailure {
  kNone,
  kConnect,  // nothing was sent: always safe to retry elsewhere
  kHead,     // sent, no head came back (reset or timeout): retried only before a byte
  kBody,     // the body broke off after the head
};

struct UpstreamResult {
  UpstreamFailure failure = UpstreamFailure::kNone;
  std::string error;
};

// `on_head` decides whether to take the body: false stops (the caller retries
// elsewhere) and the connection is dropped.
UpstreamResult upstream_exchange(const std::string& host, const std::string& port,
                                 const std::string& method, const std::string& target,
                                 const std::string& body, const UpstreamTimeouts& timeouts,
                                 const std::function<bool(const UpstreamHead&)>& on_head,
                                 const std::function<void(std::string_view)>& on_data);

}  // namespace strata::router
