#include "served_model.h"

#include <csignal>

#include <nlohmann/json.hpp>

namespace ringserve::e2e {

std::string fixture_model() {
  return testing::fixture_path("models/tiny-qwen2").string();
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

ServedModel::ServedModel(std::vector<std::string> extra) {
  socket_ = (tmp_.path() / "ringserve.sock").string();
  std::vector<std::string> argv = {testing::binary_path("ringserve").string(),
                                   "serve",
                                   "--model",
                                   fixture_model(),
                                   "--backend",
                                   "cpu",
                                   "--threads",
                                   "1",
                                   "--socket",
                                   socket_,
                                   "--preflight",
                                   "off",
                                   "--log-level",
                                   "debug"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  child_ = std::make_unique<Child>(std::move(argv), tmp_.path(), "ringserve");
  ready_ = child_->wait_for_output("ringserve: listening on", std::chrono::seconds(120));
}

ServedModel::~ServedModel() {
  if (child_->running()) stop();
}

int ServedModel::stop() {
  child_->signal(SIGTERM);
  return child_->wait(std::chrono::seconds(120)).value_or(-1);
}

Reference reference_generation(const std::vector<int32_t>& prompt, int max_new_tokens,
                               bool ignore_eos, const std::filesystem::path& dir) {
  std::vector<std::string> argv = {testing::binary_path("ringserve").string(),
                                   "generate",
                                   "--model",
                                   fixture_model(),
                                   "--backend",
                                   "cpu",
                                   "--threads",
                                   "1",
                                   "--prompt-ids",
                                   join_ids(prompt),
                                   "--max-new-tokens",
                                   std::to_string(max_new_tokens),
                                   "--json"};
  if (ignore_eos) argv.push_back("--ignore-eos");
  RunResult r = run(std::move(argv), dir);
  Reference ref;
  if (r.status != 0) {
    ref.error = "ringserve generate exited " + std::to_string(r.status) + ": " + r.err;
    return ref;
  }
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("ids")) {
    ref.error = "ringserve generate printed no JSON with ids: " + r.out;
    return ref;
  }
  ref.ids = j["ids"].get<std::vector<int32_t>>();
  return ref;
}

}  // namespace ringserve::e2e
