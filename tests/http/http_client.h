// A small blocking HTTP/1.1 client over raw loopback sockets, for the server tests: it
// can send anything (malformed requests included), read responses with Content-Length
// or chunked bodies, read a server-sent-event stream event by event, and drop the
// connection at any moment. Every read and write has a timeout, so no test can hang.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::testing {

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body); }
};

class HttpConnection {
 public:
  explicit HttpConnection(uint16_t port, double timeout_s = 30)
      : timeout_ms_(static_cast<int>(timeout_s * 1000)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~HttpConnection() { close(); }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool open() const { return fd_ >= 0; }

  void send_raw(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      wait(POLLOUT);
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += static_cast<size_t>(n);
    }
  }

  void send_request(const std::string& method, const std::string& path,
                    const std::string& body = {}, const std::vector<std::string>& headers = {}) {
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto& h : headers) req += h + "\r\n";
    if (!body.empty() || method == "POST") {
      req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n";
    }
    req += "\r\n" + body;
    send_raw(req);
  }

  // The client stops sending (a half-close): the server may still answer.
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  // Status line and headers of the final response; interim 1xx responses are skipped,
  // as HTTP/1.1 clients must (and counted in `interim`), unless `skip_interim` is false.
  HttpResult read_head(bool skip_interim = true) {
    HttpResult r;
    std::string status_line = read_line();
    for (;;) {
      if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) {
        throw std::runtime_error("bad status line: " + status_line);
      }
      r.status = std::stoi(status_line.substr(9, 3));
      if (r.status >= 200 || r.status == 101 || !skip_interim) break;
      while (!read_line().empty()) {
      }
      ++interim;
      status_line = read_line();
    }
    for (std::string line; !(line = read_line()).empty();) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      r.headers[name] = line.substr(v);
    }
    chunked_ = r.headers.count("transfer-encoding") && r.headers["transfer-encoding"] == "chunked";
    return r;
  }

  // The next piece of a chunked body; nullopt after the last chunk.
  std::optional<std::string> read_chunk() {
    const std::string size_line = read_line();
    const size_t size = std::stoul(size_line, nullptr, 16);
    if (size == 0) {
      while (!read_line().empty()) {
      }
      return std::nullopt;
    }
    std::string data = read_exact(size);
    read_line();
    return data;
  }

  HttpResult read_response() {
    HttpResult r = read_head();
    if (chunked_) {
      while (auto c = read_chunk()) r.body += *c;
    } else if (r.headers.count("content-length")) {
      r.body = read_exact(std::stoul(r.headers["content-length"]));
    }
    return r;
  }

  // Server-sent events of a streamed response: the payload after "data: ", one at a time.
  std::optional<std::string> read_event() {
    for (;;) {
      if (const size_t end = events_.find("\n\n"); end != std::string::npos) {
        std::string ev = events_.substr(0, end);
        events_.erase(0, end + 2);
        if (ev.rfind("data: ", 0) == 0) return ev.substr(6);
        continue;
      }
      auto c = read_chunk();
      if (!c) return std::nullopt;
      events_ += *c;
    }
  }

  // True if the server closed the connection (reads EOF within the timeout).
  bool server_closed(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK) <= 0;
  }

 private:
  void wait(short events) {
    pollfd p{fd_, events, 0};
    const int r = ::poll(&p, 1, timeout_ms_);
    if (r <= 0) throw std::runtime_error("socket timeout");
  }

  bool fill() {
    wait(POLLIN);
    char buf[16384];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }

  std::string read_line() {
    for (;;) {
      if (const size_t end = in_.find("\r\n"); end != std::string::npos) {
        std::string line = in_.substr(0, end);
        in_.erase(0, end + 2);
        return line;
      }
      if (!fill()) throw std::runtime_error("connection closed mid-response");
    }
  }

  std::string read_exact(size_t n) {
    while (in_.size() < n) {
      if (!fill()) throw std::runtime_error("connection closed mid-body");
    }
    std::string out = in_.substr(0, n);
    in_.erase(0, n);
    return out;
  }

  int fd_ = -1;

 public:
  int interim = 0;  // 1xx responses read_head skipped

 private:
  int timeout_ms_;
  std::string in_;
  std::string events_;
  bool chunked_ = false;
};

inline HttpResult http_request(uint16_t port, const std::string& method, const std::string& path,
                               const std::string& body = {},
                               const std::vector<std::string>& headers = {}) {
  HttpConnection c(port);
  c.send_request(method, path, body, headers);
  return c.read_response();
}

inline HttpResult http_get(uint16_t port, const std::string& path,
                           const std::vector<std::string>& headers = {}) {
  return http_request(port, "GET", path, {}, headers);
}

inline HttpResult http_post(uint16_t port, const std::string& path, const nlohmann::json& body,
                            const std::vector<std::string>& headers = {}) {
  return http_request(port, "POST", path, body.dump(), headers);
}

// Reads a whole streamed response: the parsed data events before [DONE].
struct StreamResult {
  int status = 0;
  std::vector<nlohmann::json> events;
  bool done = false;  // saw data: [DONE]
};

inline StreamResult http_stream(uint16_t port, const std::string& path,
                                const nlohmann::json& body) {
  HttpConnection c(port);
  c.send_request("POST", path, body.dump());
  StreamResult r;
  const HttpResult head = c.read_head();
  r.status = head.status;
  if (head.status != 200) return r;
  while (auto ev = c.read_event()) {
    if (*ev == "[DONE]") {
      r.done = true;
      continue;
    }
    r.events.push_back(nlohmann::json::parse(*ev));
  }
  return r;
}

// The value of a sample line "name{labels} value" (or "name value") in /metrics text.
inline double metric_value(const std::string& text, const std::string& name) {
  size_t pos = 0;
  while ((pos = text.find(name, pos)) != std::string::npos) {
    const bool line_start = pos == 0 || text[pos - 1] == '\n';
    const size_t after = pos + name.size();
    if (line_start && after < text.size() && (text[after] == ' ')) {
      return std::stod(text.substr(after + 1, text.find('\n', after) - after - 1));
    }
    pos = after;
  }
  throw std::runtime_error("metric " + name + " not found");
}

}  // namespace strata::testing
