#include "loadgen/runner.h"

#include <deque>
#include <memory>

#include "loadgen/arrival.h"
#include "loadgen/openai_protocol.h"

namespace strata::loadgen {
namespace {

class Run {
 public:
  Run(const RunOptions& o, const std::vector<RequestSpec>& requests,
      const std::function<void(const Progress&)>& on_progress)
      : o_(o),
        requests_(requests),
        on_progress_(on_progress),
        loop_(o.url, o.api_key, o.timeout_s),
        records_(requests.size()) {}

  RunResult run() {
    times_ = arrival_times(static_cast<int64_t>(requests_.size()), o_.request_rate, o_.burstiness,
                           o_.seed);
    start_s_ = loop_.now_s();
    end_s_ = start_s_;
    arrive();
    if (on_progress_) tick();
    loop_.run();
    if (on_progress_) on_progress_(progress());
    return {std::move(records_), end_s_ - start_s_};
  }

 private:
  bool chat() const { return o_.endpoint.find("chat") != std::string::npos; }

  // Queues every request whose arrival time has come, in order, then waits for the next.
  void arrive() {
    const double now = loop_.now_s() - start_s_;
    while (next_ < times_.size() && times_[next_] <= now) waiting_.push_back(next_++);
    dispatch();
    if (next_ < times_.size()) loop_.after(times_[next_] - now, [this] { arrive(); });
  }

  void dispatch() {
    while (!waiting_.empty() && (o_.max_concurrency <= 0 || running_ < o_.max_concurrency)) {
      const size_t i = waiting_.front();
      waiting_.pop_front();
      send(i);
    }
  }

  void send(size_t i) {
    ++running_;
    const double sent = loop_.now_s();
    auto rec = std::make_shared<StreamRecorder>(chat(), sent, requests_[i].prompt_tokens);
    StreamHandler h;
    h.on_head = [rec](int status) { rec->on_head(status); };
    h.on_data = [this, rec](std::string_view bytes) { rec->on_data(bytes, loop_.now_s()); };
    h.on_end = [this, rec, i, sent](const std::string& error) {
      const double now = loop_.now_s();
      RequestRecord r = rec->finish(error);
      r.start_s = sent - start_s_;
      end_s_ = std::max(end_s_, now);
      --running_;
      ++finished_;
      if (r.ok()) {
        ++completed_;
        output_tokens_ += r.output_tokens;
      } else {
        ++failed_;
      }
      records_[i] = std::move(r);
      dispatch();
    };
    loop_.post_stream(o_.endpoint, requests_[i].body, std::move(h));
  }

  Progress progress() const {
    Progress p;
    p.total = static_cast<int64_t>(requests_.size());
    p.completed = completed_;
    p.failed = failed_;
    p.running = running_;
    p.output_tokens = output_tokens_;
    p.elapsed_s = loop_.now_s() - start_s_;
    return p;
  }

  void tick() {
    on_progress_(progress());
    if (finished_ < requests_.size()) loop_.after(0.1, [this] { tick(); });
  }

  const RunOptions& o_;
  const std::vector<RequestSpec>& requests_;
  const std::function<void(const Progress&)>& on_progress_;
  EventLoop loop_;
  std::vector<RequestRecord> records_;
  std::vector<double> times_;
  size_t next_ = 0;
  std::deque<size_t> waiting_;
  int64_t running_ = 0, completed_ = 0, failed_ = 0, output_tokens_ = 0;
  size_t finished_ = 0;
  double start_s_ = 0, end_s_ = 0;
};

}  // namespace

RunResult run_benchmark(const RunOptions& o, const std::vector<RequestSpec>& requests,
                        const std::function<void(const Progress&)>& on_progress) {
  Run run(o, requests, on_progress);
  return run.run();
}

}  // namespace strata::loadgen
