// The rollback journal: one JSON object per line, appended and fsynced
// before and after every change, so a crash leaves a record of what may
// have been written. An entry's later lines (same id) supersede earlier
// ones; the state moves pending -> applied | failed | reverted, and later
// applied -> rolled_back | rollback_failed | expired.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::preflight {

inline constexpr const char* kDefaultJournalPath = "/var/lib/ringserve/preflight/journal.jsonl";

struct JournalEntry {
  std::string id;       // unique per change
  std::string ts;       // UTC, ISO 8601
  std::string boot_id;  // /proc/sys/kernel/random/boot_id when written
  std::string host;
  std::string action;  // "A1".."A4"
  std::string bdf;
  std::string target;  // the file written
  std::string kind;    // "text" (attribute) or "config16" (masked config register)
  size_t offset = 0;   // config16 only
  uint16_t mask = 0;   // config16 only
  std::string old_value;
  std::string new_value;
  std::string readback;
  std::string state;
  std::string message;
  std::string tool_version;
};

class Journal {
 public:
  explicit Journal(std::filesystem::path path) : path_(std::move(path)) {}
  const std::filesystem::path& path() const { return path_; }

  // Appends one line and fsyncs it (and the directory when the file is new).
  Status append(const JournalEntry& entry);
  // Every line, in order. A missing file is an empty journal; a corrupt line
  // is an error naming it (the journal is never guessed at).
  Expected<std::vector<JournalEntry>> read_all() const;
  // The latest line of each entry id, in order of first appearance.
  Expected<std::vector<JournalEntry>> latest() const;

 private:
  std::filesystem::path path_;
};

std::string utc_now();

}  // namespace ringserve::preflight
