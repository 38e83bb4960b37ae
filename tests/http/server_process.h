// Runs `strata serve` as a child process on a free loopback port (--port 0; the port is
// read from its "listening on" line), waits for /health 200, and kills it when the test
// ends (the child also dies with the test process: PR_SET_PDEATHSIG).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "http/http_client.h"
#include "support/paths.h"

namespace strata::testing {

class ServerProcess {
 public:
  // `args` follow `strata serve -m MODEL --host 127.0.0.1 --port 0`.
  ServerProcess(const std::string& model, std::vector<std::string> args, bool wait_ready = true) {
    static int counter = 0;
    log_path_ = scratch_dir() + "/serve-" + std::to_string(counter++) + ".log";
    std::vector<std::string> argv = {strata_bin(), "serve",     "-m",     model,
                                     "--host",     "127.0.0.1", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(log, STDERR_FILENO);
      ::dup2(null, STDOUT_FILENO);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    port_ = wait_for_port(20.0);
    if (wait_ready) wait_healthy(30.0);
  }

  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

  std::string log() const {
    std::ifstream in(log_path_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  bool running() {
    if (exited_) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      exit_status_ = status;
      return false;
    }
    return true;
  }

  void signal(int sig) { ::kill(pid_, sig); }

  // Waits for the process to exit; its exit code, or nullopt on timeout / a signal death.
  std::optional<int> wait_exit(double timeout_s) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (running()) {
      if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!WIFEXITED(exit_status_)) return std::nullopt;
    return WEXITSTATUS(exit_status_);
  }

  // Resident memory of the server in KiB (VmRSS from /proc/PID/status).
  long rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
    }
    return -1;
  }

  void wait_healthy(double timeout_s) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      try {
        if (http_get(port_, "/health").status == 200) return;
      } catch (const std::exception&) {
      }
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("server not healthy:\n" + log());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  uint16_t wait_for_port(double timeout_s) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    const std::string marker = "listening on http://127.0.0.1:";
    for (;;) {
      const std::string text = log();
      if (const size_t at = text.find(marker); at != std::string::npos) {
        const size_t end = text.find('\n', at);
        if (end != std::string::npos)
          return static_cast<uint16_t>(std::stoi(text.substr(at + marker.size())));
      }
      if (!running() || std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("strata serve did not start:\n" + text);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::string log_path_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  bool exited_ = false;
  int exit_status_ = 0;
};

}  // namespace strata::testing
