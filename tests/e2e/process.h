// Child processes for end-to-end tests: the real `ringserve serve`, ringctl
// and ringbench binaries, with their output captured to files and bounded
// waits (a watchdog, never a timing assertion).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ringserve::e2e {

class Child {
 public:
  // Starts argv[0] with stdout and stderr redirected to files in `dir`.
  Child(std::vector<std::string> argv, const std::filesystem::path& dir, const std::string& name);
  ~Child();  // SIGKILLs a child still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  std::string out() const;
  std::string err() const;

  // Waits until stdout contains `text`; false on timeout or if the child exited.
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout);
  void signal(int sig);
  // The exit status (128 + signal when killed), or nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::filesystem::path out_, err_;
};

struct RunResult {
  int status = -1;  // -1: timed out (killed)
  std::string out, err;
};
// Runs a command to completion (bounded).
RunResult run(std::vector<std::string> argv, const std::filesystem::path& dir,
              std::chrono::milliseconds timeout = std::chrono::seconds(120));

}  // namespace ringserve::e2e
