#include "process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ringserve::e2e {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int decode_status(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

std::atomic<int> g_counter{0};

}  // namespace

Child::Child(std::vector<std::string> argv, const std::filesystem::path& dir,
             const std::string& name) {
  const int n = g_counter.fetch_add(1);
  out_ = dir / (name + "." + std::to_string(n) + ".out");
  err_ = dir / (name + "." + std::to_string(n) + ".err");
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string out_path = out_.string(), err_path = err_.string();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int in = open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(args[0], args.data());
    _exit(127);
  }
}

Child::~Child() {
  if (running()) {
    kill(pid_, SIGKILL);
    wait(std::chrono::seconds(10));
  }
}

std::string Child::out() const {
  return slurp(out_);
}
std::string Child::err() const {
  return slurp(err_);
}

bool Child::running() {
  if (status_) return false;
  int raw = 0;
  const pid_t r = waitpid(pid_, &raw, WNOHANG);
  if (r == pid_) {
    status_ = decode_status(raw);
    return false;
  }
  return r == 0;
}

bool Child::wait_for_output(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (out().find(text) != std::string::npos) return true;
    if (!running()) return out().find(text) != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void Child::signal(int sig) {
  if (running()) kill(pid_, sig);
}

std::optional<int> Child::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

RunResult run(std::vector<std::string> argv, const std::filesystem::path& dir,
              std::chrono::milliseconds timeout) {
  const std::string name = std::filesystem::path(argv.at(0)).filename().string();
  Child child(std::move(argv), dir, name);
  RunResult result;
  if (auto status = child.wait(timeout)) {
    result.status = *status;
  } else {
    child.signal(SIGKILL);
    child.wait(std::chrono::seconds(10));
  }
  result.out = child.out();
  result.err = child.err();
  return result;
}

}  // namespace ringserve::e2e
