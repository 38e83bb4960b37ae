#include "disagg/ucx_transport.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <list>
#include <vector>

#include "core/error.h"

namespace strata::disagg {
namespace {

using Clock = std::chrono::steady_clock;

constexpr unsigned kMessageAm = 1;     // sender -> receiver: header = prefix, data = the rest
constexpr unsigned kReplyAm = 2;       // receiver -> sender: u8 status, u32 bytes, text
constexpr unsigned kAmIds = 1u << 16;  // the wire's u16 id space (see set_am_handlers)
constexpr uint32_t kMaxReplyBytes = 64 * 1024;
constexpr size_t kMaxConnections = 64;  // concurrent endpoints per receiver; more are refused

[[noreturn]] void fail(const std::string& what) {
  throw Error("KV transport (ucx): " + what);
}

Clock::time_point deadline_after(double s) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(s * 1e6));
}

// The state of a request returned by a *_nbx call (NULL: completed at once).
ucs_status_t request_status(void* request) {
  if (request == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(request)) return UCS_PTR_STATUS(request);
  return ucp_request_check_status(request);
}

// Frees a completed request (the NULL and error pointers own nothing).
void release(void*& request) {
  if (request != nullptr && !UCS_PTR_IS_ERR(request)) ucp_request_free(request);
  request = nullptr;
}

// Progress that sleeps in the kernel when there is nothing to do: after a short spin
// (the next event is usually microseconds away) the worker is armed and its event fd
// polled, so that, as with blocking sockets, the thread is woken by the data itself
// rather than by a timer (which on a loaded machine costs a scheduler slice per wait).
// Returns whether the worker did anything.
class Pacer {
 public:
  bool step(ucp_worker_h worker, int efd, std::chrono::milliseconds max_wait) {
    if (ucp_worker_progress(worker) != 0) {
      last_ = Clock::now();
      return true;
    }
    if (Clock::now() - last_ < std::chrono::microseconds(50)) return false;
    const ucs_status_t st = efd >= 0 ? ucp_worker_arm(worker) : UCS_ERR_UNSUPPORTED;
    if (st == UCS_ERR_BUSY) return false;  // events arrived meanwhile: progress them
    if (st != UCS_OK) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));  // no wakeup support
      return false;
    }
    pollfd p{efd, POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::max<int64_t>(max_wait.count(), 1)));
    return false;
  }
  void touch() { last_ = Clock::now(); }

 private:
  Clock::time_point last_ = Clock::now();
};

// Progresses `worker` until done() or the deadline; returns done().
template <typename Done>
bool progress_until(ucp_worker_h worker, int efd, Clock::time_point deadline, Done done) {
  Pacer pacer;
  while (!done()) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    pacer.step(worker, efd, std::min(left, std::chrono::milliseconds(100)));
  }
  return true;
}

sockaddr_storage resolve(const std::string& host, uint16_t port, bool passive, const char* who) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE | AI_NUMERICHOST : 0);
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0 || res == nullptr)
    throw Error(std::string(who) + ": bad address '" + host + "': " + gai_strerror(rc));
  sockaddr_storage out{};
  std::memcpy(&out, res->ai_addr, std::min<size_t>(res->ai_addrlen, sizeof(out)));
  freeaddrinfo(res);
  return out;
}

socklen_t sockaddr_len(const sockaddr_storage& a) {
  return a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

uint16_t sockaddr_port(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
}

// A UCP context and one worker; UCS_THREAD_MODE_SERIALIZED because the receiver's worker
// is made on the caller's thread and driven by its own, and senders lock a mutex.
struct UcpWorker {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  int efd = -1;  // the worker's wakeup fd (owned by UCX)

  explicit UcpWorker(const std::string& tls) {
    ucp_config_t* config = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK)
      fail(std::string("cannot read the UCX configuration: ") + ucs_status_string(st));
    if (!tls.empty()) {
      st = ucp_config_modify(config, "TLS", tls.c_str());
      if (st != UCS_OK) {
        ucp_config_release(config);
        fail("bad transport list '" + tls + "': " + ucs_status_string(st));
      }
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    st = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (st != UCS_OK) fail(std::string("cannot open a UCP context: ") + ucs_status_string(st));
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    st = ucp_worker_create(context, &wp, &worker);
    if (st != UCS_OK) {
      ucp_cleanup(context);
      fail(std::string("cannot create a UCP worker: ") + ucs_status_string(st));
    }
    if (ucp_worker_get_efd(worker, &efd) != UCS_OK) efd = -1;  // then progress sleeps
  }
  ~UcpWorker() {
    if (worker) ucp_worker_destroy(worker);
    if (context) ucp_cleanup(context);
  }
  UcpWorker(const UcpWorker&) = delete;
  UcpWorker& operator=(const UcpWorker&) = delete;

  // Installs `cb` for `id` and a handler that drops the message for every other id of
  // the wire's u16 space. UCX 1.13 does not bound-check the id of an incoming message on
  // every path (the first-fragment handler indexes its handler table with it), so a peer
  // sending id 0 next to a registered 1, or id 40000, crashes the process; with every id
  // registered the table has all 65536 entries (about 2 MiB per worker, a few ms).
  void set_am_handlers(unsigned id, ucp_am_recv_callback_t cb, void* arg) {
    for (unsigned other = kAmIds; other-- > 0;)
      if (other != id) set_am_handler(other, &drop_message, nullptr);
    set_am_handler(id, cb, arg);
  }
  static ucs_status_t drop_message(void*, const void*, size_t, void*, size_t,
                                   const ucp_am_recv_param_t*) {
    return UCS_OK;
  }
  void set_am_handler(unsigned id, ucp_am_recv_callback_t cb, void* arg) {
    ucp_am_handler_param_t p{};
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                   UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    p.id = id;
    p.flags = UCP_AM_FLAG_WHOLE_MSG;
    p.cb = cb;
    p.arg = arg;
    const ucs_status_t st = ucp_worker_set_am_recv_handler(worker, &p);
    if (st != UCS_OK)
      fail(std::string("cannot set an active message handler: ") + ucs_status_string(st));
  }
};

void* close_endpoint(ucp_ep_h ep) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  return ucp_ep_close_nbx(ep, &p);
}

std::vector<uint8_t> reply_bytes(uint8_t status, const std::string& text) {
  const std::string t = text.substr(0, kMaxReplyBytes);
  std::vector<uint8_t> out(5 + t.size());
  out[0] = status;
  const uint32_t n = static_cast<uint32_t>(t.size());
  std::memcpy(out.data() + 1, &n, 4);
  std::memcpy(out.data() + 5, t.data(), t.size());
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Sender

struct UcxKvSender::Impl {
  UcxTransportOptions o;
  std::unique_ptr<UcpWorker> ucp;
  // The endpoint kept from the last exchange (callbacks run inside ucp_worker_progress
  // on the sending thread, under the sender's mutex).
  ucp_ep_h ep = nullptr;
  std::string ep_where;
  Clock::time_point ep_used;
  ucs_status_t ep_status = UCS_OK;
  bool got_reply = false;
  uint8_t reply_status = 0;
  std::string reply_text;
  std::string reply_error;

  static ucs_status_t on_reply(void* arg, const void*, size_t, void* data, size_t length,
                               const ucp_am_recv_param_t* param) {
    auto* im = static_cast<Impl*>(arg);
    if (im->ep == nullptr ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP && param->reply_ep != im->ep))
      return UCS_OK;  // a late reply to an endpoint already given up
    im->got_reply = true;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV || length < 5 ||
        length > 5 + kMaxReplyBytes) {
      im->reply_error = "malformed reply of " + std::to_string(length) + " bytes";
      return UCS_OK;
    }
    const auto* b = static_cast<const uint8_t*>(data);
    uint32_t n;
    std::memcpy(&n, b + 1, 4);
    if (n != length - 5) {
      im->reply_error = "reply text of " + std::to_string(n) + " bytes in a reply of " +
                        std::to_string(length) + " bytes";
      return UCS_OK;
    }
    im->reply_status = b[0];
    im->reply_text.assign(reinterpret_cast<const char*>(b + 5), n);
    return UCS_OK;
  }

  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
    auto* im = static_cast<Impl*>(arg);
    if (ep == im->ep) im->ep_status = status;
  }

  void connect(const std::string& host, uint16_t port, const std::string& where) {
    const sockaddr_storage addr = resolve(host, port, false, "KV transport (ucx)");
    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                   UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
    p.sockaddr.addrlen = sockaddr_len(addr);
    p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    p.err_handler.cb = &Impl::on_ep_error;
    p.err_handler.arg = this;
    ep_status = UCS_OK;
    const ucs_status_t st = ucp_ep_create(ucp->worker, &p, &ep);
    if (st != UCS_OK) {
      ep = nullptr;
      fail("connect to " + where + ": " + ucs_status_string(st));
    }
    ep_where = where;
  }

  // Closes the endpoint and waits (bounded) for `pending` (a send reading the caller's
  // buffer) to finish; a force close completes it with UCS_ERR_CANCELED. Should UCX
  // still hold it, the worker is replaced so that nothing touches the buffer later.
  void drop(void*& pending) {
    if (ep != nullptr) {
      void* c = close_endpoint(ep);
      progress_until(ucp->worker, ucp->efd, deadline_after(1.0),
                     [&] { return request_status(c) != UCS_INPROGRESS; });
      if (request_status(c) != UCS_INPROGRESS) release(c);
      ep = nullptr;
    }
    if (pending != nullptr && !UCS_PTR_IS_ERR(pending)) {
      progress_until(ucp->worker, ucp->efd, deadline_after(1.0),
                     [&] { return request_status(pending) != UCS_INPROGRESS; });
      if (request_status(pending) == UCS_INPROGRESS) {
        ucp.reset();  // destroys the worker and its requests
        ucp = std::make_unique<UcpWorker>(o.tls);
        ucp->set_am_handlers(kReplyAm, &Impl::on_reply, this);
        pending = nullptr;
        return;
      }
    }
    release(pending);
  }

  enum class Outcome { kReplied, kEndpointFailed };
  // One message and its reply on `ep`. Returns kEndpointFailed when the endpoint broke
  // before any reply (a kept endpoint the receiver has since closed: worth one retry on
  // a fresh one); throws on a deadline or a malformed reply. Keeps the endpoint only
  // after a clean exchange.
  Outcome exchange(std::span<const uint8_t> message, const std::string& where,
                   std::string& status_text) {
    got_reply = false;
    reply_status = 0;
    reply_text.clear();
    reply_error.clear();
    // The header is exactly the format prefix (a shorter message goes as a short header,
    // which the receiver refuses); the rest is the AM data, eager or by rendezvous.
    const size_t header = std::min(message.size(), kKvHeaderBytes);
    ucp_request_param_t sp{};
    sp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    sp.flags = UCP_AM_SEND_FLAG_REPLY;
    void* req = ucp_am_send_nbx(ep, kMessageAm, message.data(), header, message.data() + header,
                                message.size() - header, &sp);
    auto failed = [&](const std::string& what) {
      drop(req);
      fail(what);
    };
    auto broken = [&](ucs_status_t st) {
      status_text = ucs_status_string(st);
      drop(req);
      return Outcome::kEndpointFailed;
    };
    // A receiver that refuses the header replies before it pulls the data, so a reply
    // also ends this phase.
    if (!progress_until(ucp->worker, ucp->efd, deadline_after(o.io_timeout_s), [&] {
          return request_status(req) != UCS_INPROGRESS || ep_status != UCS_OK || got_reply;
        }))
      failed("connect and send to " + where + " timed out");
    ucs_status_t st = request_status(req);
    if (!got_reply && st != UCS_OK && st != UCS_INPROGRESS) return broken(st);
    if (!got_reply && ep_status != UCS_OK) return broken(ep_status);
    if (!progress_until(ucp->worker, ucp->efd, deadline_after(o.io_timeout_s),
                        [&] { return got_reply || ep_status != UCS_OK; }))
      failed("reply from " + where + " timed out");
    if (!got_reply) return broken(ep_status);
    st = request_status(req);
    if (st != UCS_OK || ep_status != UCS_OK || !reply_error.empty()) {
      drop(req);  // refused before the data moved, or broken: do not reuse
    } else {
      release(req);
      ep_used = Clock::now();
    }
    if (!reply_error.empty()) fail(reply_error + " from " + where);
    return Outcome::kReplied;
  }
};

UcxKvSender::UcxKvSender(UcxTransportOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->o = std::move(options);
  impl_->ucp = std::make_unique<UcpWorker>(impl_->o.tls);
  impl_->ucp->set_am_handlers(kReplyAm, &Impl::on_reply, impl_.get());
}

UcxKvSender::~UcxKvSender() {
  void* none = nullptr;
  impl_->drop(none);
}

std::string UcxKvSender::send(const std::string& host, uint16_t port,
                              std::span<const uint8_t> message) {
  std::lock_guard lock(mu_);
  Impl& im = *impl_;
  const std::string where = host + ":" + std::to_string(port);
  for (int attempt = 0;; ++attempt) {
    // Reuse the endpoint while it is healthy and well inside the receiver's idle
    // deadline; otherwise connect afresh.
    const bool reuse =
        im.ep != nullptr && im.ep_where == where && im.ep_status == UCS_OK &&
        Clock::now() - im.ep_used < std::chrono::duration<double>(im.o.idle_timeout_s / 2);
    if (!reuse) {
      void* none = nullptr;
      im.drop(none);
      im.connect(host, port, where);
    }
    std::string broken;
    if (im.exchange(message, where, broken) == Impl::Outcome::kReplied) break;
    if (!reuse || attempt > 0) fail("send to " + where + ": " + broken);
  }
  if (im.reply_status != 0) throw Error("KV transfer rejected by the receiver: " + im.reply_text);
  return im.reply_text;
}

// ---------------------------------------------------------------------------------------
// Receiver

struct UcxKvReceiver::Impl {
  // kAwaitMessage: connected, first message due within io_timeout_s; kIdle: replied,
  // the next message may come within idle_timeout_s.
  enum class Phase { kAwaitMessage, kReceiving, kReady, kIdle, kClosing };
  struct Conn {
    Impl* im = nullptr;
    ucp_ep_h ep = nullptr;
    Phase phase = Phase::kAwaitMessage;
    Clock::time_point deadline;
    bool ep_failed = false;
    bool protocol_error = false;  // a second message on the endpoint
    bool rejected = false;        // counted in rejected() already
    std::vector<uint8_t> buf;
    void* recv_req = nullptr;
    void* close_req = nullptr;
    uint8_t status = 0;
    std::string text;
    struct Reply {
      void* req;
      std::vector<uint8_t> bytes;  // alive until the send completes
      Clock::time_point deadline;
    };
    std::list<Reply> replies;  // replies still being sent
    void free_buffer() {
      im->buffered -= buf.size();
      std::vector<uint8_t>().swap(buf);
    }
  };

  UcxTransportOptions o;
  std::unique_ptr<UcpWorker> ucp;
  ucp_listener_h listener = nullptr;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t>* rejected = nullptr;
  std::vector<ucp_conn_request_h> pending;
  // Bytes of messages being received or decoded, across endpoints: at most one
  // max_message_bytes in all, as the TCP receiver (one connection at a time) holds.
  uint64_t buffered = 0;
  std::list<Conn> conns;    // stable addresses: UCX callbacks hold Conn*
  std::list<Conn> zombies;  // closes UCX never finished; kept until the worker is destroyed

  ~Impl() {
    // The worker goes first: the endpoints' callbacks point into the lists.
    if (listener) ucp_listener_destroy(listener);
    ucp.reset();
  }

  void reject(Conn& c) {
    if (!c.rejected) rejected->fetch_add(1);
    c.rejected = true;
  }

  static void on_conn_request(ucp_conn_request_h request, void* arg) {
    static_cast<Impl*>(arg)->pending.push_back(request);
  }

  static void on_ep_error(void* arg, ucp_ep_h, ucs_status_t) {
    static_cast<Conn*>(arg)->ep_failed = true;
  }

  static ucs_status_t on_message(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param) {
    auto* im = static_cast<Impl*>(arg);
    Conn* c = nullptr;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)
      for (Conn& k : im->conns)
        if (k.ep == param->reply_ep && k.phase != Phase::kClosing) c = &k;
    if (c == nullptr) {
      im->rejected->fetch_add(1);  // no endpoint to answer on: drop it
      return UCS_OK;
    }
    if (c->phase != Phase::kAwaitMessage && c->phase != Phase::kIdle) {
      c->protocol_error = true;  // a message before the previous one was answered
      return UCS_OK;
    }
    c->status = 0;
    c->text.clear();
    c->rejected = false;
    try {
      if (header_length != kKvHeaderBytes)
        fail("message header of " + std::to_string(header_length) + " bytes, expected " +
             std::to_string(kKvHeaderBytes));
      const uint64_t total = kv_message_size_from_header(
          std::span(static_cast<const uint8_t*>(header), header_length), im->o.limits);
      if (total - kKvHeaderBytes != length)
        fail("the header announces " + std::to_string(total) + " bytes but the message has " +
             std::to_string(length + kKvHeaderBytes));
      if (im->buffered + total > im->o.limits.max_message_bytes)
        fail("busy: " + std::to_string(im->buffered) + " bytes of other messages in flight");
      try {
        c->buf.resize(total);
      } catch (const std::bad_alloc&) {
        fail("cannot allocate " + std::to_string(total) + " bytes");
      }
      im->buffered += total;
      std::memcpy(c->buf.data(), header, kKvHeaderBytes);
      if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        ucp_request_param_t rp{};
        void* r = ucp_am_recv_data_nbx(im->ucp->worker, data, c->buf.data() + kKvHeaderBytes,
                                       length, &rp);
        if (UCS_PTR_IS_ERR(r))
          fail(std::string("receive: ") + ucs_status_string(UCS_PTR_STATUS(r)));
        c->recv_req = r;
        c->phase = r == nullptr ? Phase::kReady : Phase::kReceiving;
        c->deadline = deadline_after(im->o.io_timeout_s);
      } else {
        if (length) std::memcpy(c->buf.data() + kKvHeaderBytes, data, length);
        c->phase = Phase::kReady;
      }
    } catch (const std::exception& e) {
      c->status = 1;
      c->text = e.what();
      c->free_buffer();
      im->reject(*c);
      c->phase = Phase::kReady;
    }
    return UCS_OK;
  }

  void accept(ucp_conn_request_h request) {
    if (conns.size() >= kMaxConnections) {
      ucp_listener_reject(listener, request);
      rejected->fetch_add(1);
      return;
    }
    Conn& c = conns.emplace_back();
    c.im = this;
    c.deadline = deadline_after(o.io_timeout_s);
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.conn_request = request;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = &Impl::on_ep_error;
    ep.err_handler.arg = &c;
    if (ucp_ep_create(ucp->worker, &ep, &c.ep) != UCS_OK) {
      conns.pop_back();
      rejected->fetch_add(1);
    }
  }

  void start_close(Conn& c) {
    if (request_status(c.recv_req) != UCS_INPROGRESS) c.free_buffer();  // else when it ends
    c.close_req = close_endpoint(c.ep);
    c.phase = Phase::kClosing;
    c.deadline = deadline_after(std::min(o.io_timeout_s, 2.0));
  }

  // Releases the replies UCX has sent; false when one failed or is past its deadline.
  bool sweep_replies(Conn& c) {
    bool ok = true;
    for (auto it = c.replies.begin(); it != c.replies.end();) {
      const ucs_status_t st = request_status(it->req);
      if (st == UCS_INPROGRESS) {
        if (c.phase != Phase::kClosing && Clock::now() >= it->deadline) ok = false;
        ++it;
        continue;
      }
      if (st != UCS_OK) ok = false;
      release(it->req);
      it = c.replies.erase(it);
    }
    return ok;
  }

  void send_reply(Conn& c) {
    Conn::Reply& r = c.replies.emplace_back();
    r.bytes = reply_bytes(c.status, c.text);
    r.deadline = deadline_after(o.io_timeout_s);
    ucp_request_param_t sp{};
    sp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    sp.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    r.req = ucp_am_send_nbx(c.ep, kReplyAm, nullptr, 0, r.bytes.data(), r.bytes.size(), &sp);
  }

  // Advances one endpoint; returns true when it is finished and can be erased.
  bool step(Conn& c, const UcxKvReceiver::Handler& handler) {
    const bool late = Clock::now() >= c.deadline;
    if (c.phase == Phase::kClosing) {
      sweep_replies(c);
      if (request_status(c.close_req) == UCS_INPROGRESS ||
          request_status(c.recv_req) == UCS_INPROGRESS || !c.replies.empty())
        return false;  // the caller moves it to zombies past the deadline
      release(c.close_req);
      release(c.recv_req);
      c.free_buffer();
      return true;
    }
    if (!sweep_replies(c)) {
      reject(c);  // the sender vanished or stopped reading before our reply went out
      start_close(c);
      return false;
    }
    if (c.ep_failed || c.protocol_error) {
      // The sender closing an idle endpoint is the normal end; anything else is a peer
      // that vanished mid-message or misbehaved.
      if (c.phase != Phase::kIdle || c.protocol_error) reject(c);
      start_close(c);
      return false;
    }
    switch (c.phase) {
      case Phase::kAwaitMessage:
      case Phase::kIdle:
        if (late) {
          if (c.phase == Phase::kAwaitMessage) reject(c);  // connected and never sent
          start_close(c);
        }
        return false;
      case Phase::kReceiving: {
        const ucs_status_t st = request_status(c.recv_req);
        if (st == UCS_INPROGRESS) {
          if (late) {
            reject(c);  // stalled mid-message
            start_close(c);
          }
          return false;
        }
        release(c.recv_req);
        if (st != UCS_OK) {
          reject(c);
          start_close(c);
          return false;
        }
        c.phase = Phase::kReady;
        [[fallthrough]];
      }
      case Phase::kReady:
        if (c.status == 0) {
          try {
            c.text = handler(decode_kv_message(c.buf, o.limits));
          } catch (const std::exception& e) {
            c.status = 1;
            c.text = e.what();
            reject(c);
          } catch (...) {
            c.status = 1;
            c.text = "KV import failed";
            reject(c);
          }
        }
        c.free_buffer();
        send_reply(c);
        c.phase = Phase::kIdle;
        c.deadline = deadline_after(o.idle_timeout_s);
        return false;
      case Phase::kClosing:
        return false;
    }
    return false;
  }

  void run(const UcxKvReceiver::Handler& handler) {
    Pacer pacer;
    while (!stop.load()) {
      bool busy = pacer.step(ucp->worker, ucp->efd, std::chrono::milliseconds(20));
      std::vector<ucp_conn_request_h> requests;
      requests.swap(pending);
      for (ucp_conn_request_h r : requests) accept(r);
      for (auto it = conns.begin(); it != conns.end();) {
        const Phase before = it->phase;
        const bool done = step(*it, handler);
        busy |= done || it->phase != before;
        if (done) {
          it = conns.erase(it);
        } else if (it->phase == Phase::kClosing && Clock::now() >= it->deadline) {
          auto next = std::next(it);
          zombies.splice(zombies.end(), conns, it);
          it = next;
        } else {
          ++it;
        }
      }
      if (busy || !requests.empty()) pacer.touch();
    }
    // Shut down: force-close everything, and give UCX a moment to finish the closes.
    for (Conn& c : conns)
      if (c.phase != Phase::kClosing) start_close(c);
    progress_until(ucp->worker, ucp->efd, deadline_after(1.0), [&] {
      for (Conn& c : conns)
        if (request_status(c.close_req) == UCS_INPROGRESS) return false;
      return true;
    });
    for (Conn& c : conns)
      if (request_status(c.close_req) != UCS_INPROGRESS) release(c.close_req);
    for (ucp_conn_request_h r : pending) ucp_listener_reject(listener, r);
    pending.clear();
  }
};

UcxKvReceiver::UcxKvReceiver(const std::string& host, uint16_t port, UcxTransportOptions o,
                             Handler handler)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.o = std::move(o);
  im.rejected = &rejected_;
  const sockaddr_storage addr = resolve(host, port, true, "--kv-listen");
  im.ucp = std::make_unique<UcpWorker>(im.o.tls);
  im.ucp->set_am_handlers(kMessageAm, &Impl::on_message, &im);
  ucp_listener_params_t lp{};
  lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  lp.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  lp.sockaddr.addrlen = sockaddr_len(addr);
  lp.conn_handler.cb = &Impl::on_conn_request;
  lp.conn_handler.arg = &im;
  const ucs_status_t st = ucp_listener_create(im.ucp->worker, &lp, &im.listener);
  if (st != UCS_OK) {
    im.listener = nullptr;
    throw Error("--kv-listen: cannot listen on " + host + ":" + std::to_string(port) +
                " over UCX: " + ucs_status_string(st));
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  if (ucp_listener_query(im.listener, &attr) != UCS_OK)
    throw Error("--kv-listen: cannot query the UCX listener");
  port_ = sockaddr_port(attr.sockaddr);
  thread_ = std::thread([this, handler = std::move(handler)] { impl_->run(handler); });
}

UcxKvReceiver::~UcxKvReceiver() {
  impl_->stop.store(true);
  if (thread_.joinable()) thread_.join();
}

}  // namespace strata::disagg
