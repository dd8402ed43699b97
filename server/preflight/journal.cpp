#include "preflight/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ringserve::preflight {
namespace {

nlohmann::json to_json(const JournalEntry& e) {
  nlohmann::json j = {{"id", e.id},
                      {"ts", e.ts},
                      {"boot_id", e.boot_id},
                      {"host", e.host},
                      {"action", e.action},
                      {"bdf", e.bdf},
                      {"target", e.target},
                      {"kind", e.kind},
                      {"old", e.old_value},
                      {"new", e.new_value},
                      {"readback", e.readback},
                      {"state", e.state},
                      {"message", e.message},
                      {"tool_version", e.tool_version}};
  if (e.kind == "config16") {
    j["offset"] = e.offset;
    j["mask"] = e.mask;
  }
  return j;
}

Expected<JournalEntry> from_json(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(Errc::kCorruptData, "not an object");
  JournalEntry e;
  auto str = [&](const char* key, std::string& out) -> bool {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return false;
    out = it->get<std::string>();
    return true;
  };
  if (!str("id", e.id) || !str("boot_id", e.boot_id) || !str("action", e.action) ||
      !str("target", e.target) || !str("kind", e.kind) || !str("old", e.old_value) ||
      !str("new", e.new_value) || !str("state", e.state)) {
    return make_error(Errc::kCorruptData,
                      "missing one of id, boot_id, action, target, kind, "
                      "old, new, state");
  }
  str("ts", e.ts);
  str("host", e.host);
  str("bdf", e.bdf);
  str("readback", e.readback);
  str("message", e.message);
  str("tool_version", e.tool_version);
  if (e.kind == "config16") {
    auto off = j.find("offset");
    auto mask = j.find("mask");
    if (off == j.end() || !off->is_number_unsigned() || mask == j.end() ||
        !mask->is_number_unsigned() || off->get<uint64_t>() > 4094 ||
        mask->get<uint64_t>() > 0xffff) {
      return make_error(Errc::kCorruptData, "config16 entry without a valid offset and mask");
    }
    e.offset = off->get<size_t>();
    e.mask = static_cast<uint16_t>(mask->get<uint32_t>());
  } else if (e.kind != "text") {
    return make_error(Errc::kCorruptData, "unknown kind \"{}\"", e.kind);
  }
  return e;
}

}  // namespace

std::string utc_now() {
  auto now = std::chrono::system_clock::now();
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", std::chrono::floor<std::chrono::seconds>(now));
}

Status Journal::append(const JournalEntry& entry) {
  std::error_code ec;
  const auto dir = path_.parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return make_error(Errc::kIoError, "creating {}: {}", dir.string(), ec.message());
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  }
  const bool fresh = !std::filesystem::exists(path_, ec);
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return make_error(Errc::kIoError, "journal {}: {}", path_.string(), std::strerror(errno));
  }
  const std::string line = to_json(entry).dump() + "\n";
  ssize_t n = ::write(fd, line.data(), line.size());
  int err = errno;
  if (n != static_cast<ssize_t>(line.size()) || ::fsync(fd) != 0) {
    err = n < 0 ? err : errno;
    ::close(fd);
    return make_error(Errc::kIoError, "journal {}: write/fsync failed: {}", path_.string(),
                      std::strerror(err));
  }
  ::close(fd);
  if (fresh && !dir.empty()) {
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
  return ok();
}

Expected<std::vector<JournalEntry>> Journal::read_all() const {
  std::vector<JournalEntry> out;
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return out;
  std::ifstream in(path_);
  if (!in) return make_error(Errc::kIoError, "journal {}: cannot open", path_.string());
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
      return make_error(Errc::kCorruptData, "journal {} line {}: not JSON", path_.string(),
                        line_no);
    }
    auto entry = from_json(json);
    if (!entry) {
      return make_error(Errc::kCorruptData, "journal {} line {}: {}", path_.string(), line_no,
                        entry.error().message);
    }
    out.push_back(std::move(*entry));
  }
  return out;
}

Expected<std::vector<JournalEntry>> Journal::latest() const {
  auto all = RS_TRY(read_all());
  std::vector<JournalEntry> out;
  std::map<std::string, size_t> index;
  for (auto& e : all) {
    auto it = index.find(e.id);
    if (it == index.end()) {
      index[e.id] = out.size();
      out.push_back(std::move(e));
    } else {
      out[it->second] = std::move(e);
    }
  }
  return out;
}

}  // namespace ringserve::preflight
