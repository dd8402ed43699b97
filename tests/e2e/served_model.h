// The real `ringserve serve` on the fixture model, in a private temp dir
// with its own socket, plus the reference: `ringserve generate --json`.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "process.h"
#include "support/test_support.h"

namespace ringserve::e2e {

std::string fixture_model();

class ServedModel {
 public:
  // `extra` goes after the defaults (cpu backend, 1 thread, preflight off).
  explicit ServedModel(std::vector<std::string> extra = {});
  ~ServedModel();

  bool ready() const { return ready_; }
  const std::string& socket() const { return socket_; }
  const std::filesystem::path& dir() const { return tmp_.path(); }
  Child& process() { return *child_; }
  std::string log() const { return child_->out() + child_->err(); }

  // SIGTERM and wait; the exit status (-1 on timeout).
  int stop();

 private:
  testing::TempDir tmp_;
  std::string socket_;
  std::unique_ptr<Child> child_;
  bool ready_ = false;
};

// `ringserve generate --json` on the fixture model: the greedy reference.
struct Reference {
  std::vector<int32_t> ids;
  std::string error;
};
Reference reference_generation(const std::vector<int32_t>& prompt, int max_new_tokens,
                               bool ignore_eos, const std::filesystem::path& dir);

std::string join_ids(const std::vector<int32_t>& ids);

}  // namespace ringserve::e2e
