#include "engine/engine_loop.h"

#include <chrono>
#include <cstdio>

#include "core/error.h"

namespace strata {

EngineLoop::EngineLoop(EngineCore& engine, std::function<void(const std::string&)> on_fatal)
    : engine_(engine), on_fatal_(std::move(on_fatal)), metrics_(engine.metrics()) {
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

RequestId EngineLoop::submit(std::vector<int32_t> prompt, const RequestOptions& options,
                             Callback on_output) {
  engine_.validate(prompt, options);  // const and thread-safe: reads only configuration
  const RequestId id = next_id_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.empty()) throw Error("the engine has failed: " + failure_);
    if (stop_) throw Error("engine is shutting down");
    submissions_.push_back({id, std::move(prompt), options, std::move(on_output)});
    ++in_flight_;
  }
  wake_.notify_all();
  return id;
}

void EngineLoop::abort(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborts_.push_back(id);
  }
  wake_.notify_all();
}

void EngineLoop::abort_all() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& p : submissions_) aborts_.push_back(p.id);
    aborts_.push_back(0);  // 0 = every request the engine holds
  }
  wake_.notify_all();
}

void EngineLoop::post(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.empty()) throw Error("the engine has failed: " + failure_);
    if (stop_) throw Error("engine is shutting down");
    tasks_.push_back(std::move(task));
  }
  wake_.notify_all();
}

size_t EngineLoop::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_;
}

EngineMetrics EngineLoop::metrics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return metrics_;
}

bool EngineLoop::wait_idle(double timeout_s) {
  std::unique_lock<std::mutex> lock(mutex_);
  return idle_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                        [&] { return in_flight_ == 0; });
}

void EngineLoop::run() {
  std::vector<Pending> submissions;
  std::vector<RequestId> aborts;
  std::vector<Task> tasks;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] {
        return stop_ || !submissions_.empty() || !aborts_.empty() || !tasks_.empty() ||
               engine_.has_work();
      });
      if (stop_) break;
      submissions.swap(submissions_);
      aborts.swap(aborts_);
      tasks.swap(tasks_);
    }
    // Tasks first: nothing has changed the KV since the outputs they follow.
    for (Task& t : tasks) {
      try {
        t(engine_);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "strata: engine task failed: %s\n", e.what());
      }
    }
    tasks.clear();
    for (auto& p : submissions) {
      try {
        const RequestId eid = engine_.add_request(std::move(p.prompt), p.options);
        to_engine_[p.id] = eid;
        from_engine_[eid] = {p.id, std::move(p.callback)};
      } catch (const std::exception& e) {
        // Validated at submit; a failure here still ends the request cleanly.
        RequestOutput o;
        o.id = p.id;
        o.finish = FinishReason::kError;
        o.error = e.what();
        deliver(p.callback, o);
        std::lock_guard<std::mutex> lock(mutex_);
        --in_flight_;
      }
    }
    submissions.clear();
    for (RequestId id : aborts) {
      if (id == 0) {
        for (const auto& [loop_id, eid] : to_engine_) engine_.abort(eid);
      } else if (const auto it = to_engine_.find(id); it != to_engine_.end()) {
        engine_.abort(it->second);
      }
    }
    aborts.clear();

    size_t finished = 0;
    std::span<const RequestOutput> outputs;
    try {
      outputs = engine_.step();
    } catch (const std::exception& e) {
      // The engine contains a failed forward pass itself (its batch ends kError). A
      // throw out of step() came from the scheduler or the KV bookkeeping, whose state
      // is now unknown: end every request and refuse new ones rather than serve from it.
      fail(std::string("engine step failed: ") + e.what());
      break;
    }
    {
      // Refresh the snapshot before the callbacks run, so a client that reads the
      // metrics right after its request finished sees that request's effects.
      std::lock_guard<std::mutex> lock(mutex_);
      metrics_ = engine_.metrics();
    }
    for (const RequestOutput& out : outputs) {
      const auto it = from_engine_.find(out.id);
      if (it == from_engine_.end()) continue;
      RequestOutput o = out;
      o.id = it->second.first;
      deliver(it->second.second, o);
      if (o.finished()) {
        to_engine_.erase(o.id);
        from_engine_.erase(it);
        ++finished;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_flight_ -= finished;
    }
    if (finished > 0) idle_.notify_all();
  }
  // Shutdown (or failure): end whatever is left so every callback sees a final output.
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error = failure_;
  }
  const FinishReason reason = error.empty() ? FinishReason::kAbort : FinishReason::kError;
  auto end = [&](RequestId id, const Callback& callback) {
    RequestOutput o;
    o.id = id;
    o.finish = reason;
    o.error = error;
    deliver(callback, o);
  };
  for (auto& [eid, entry] : from_engine_) end(entry.first, entry.second);
  from_engine_.clear();
  to_engine_.clear();
  std::vector<Pending> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(submissions_);
  }
  for (auto& p : submissions) end(p.id, p.callback);
  for (auto& p : left) end(p.id, p.callback);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_ = 0;
  }
  idle_.notify_all();
}

void EngineLoop::fail(const std::string& what) {
  std::fprintf(stderr, "strata: %s; ending all %zu requests\n", what.c_str(), in_flight());
  std::function<void(const std::string&)> on_fatal;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = what;
    on_fatal = on_fatal_;
  }
  if (on_fatal) on_fatal(what);
}

// A callback that throws must not take the engine thread down with it; the request it
// concerns is the callback owner's to end.
void EngineLoop::deliver(const Callback& callback, const RequestOutput& o) {
  try {
    callback(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: output callback of request %llu failed: %s\n",
                 static_cast<unsigned long long>(o.id), e.what());
  }
}

std::string EngineLoop::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

}  // namespace strata
