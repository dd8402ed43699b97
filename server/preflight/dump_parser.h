// Reader for `lspci -x/-xxx/-xxxx` text (also `-vv -xxx`, whose text lines are
// skipped). It is stricter than libpci's own dump reader about what it
// accepts and never exits: every problem is an Error or a note. It also
// forgives what mail clients do to pasted dumps: `> ` quote marks, CRLF.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/config_decoder.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

inline constexpr size_t kConfigSpaceSize = 4096;
inline constexpr size_t kMaxDumpBytes = 64u << 20;
inline constexpr size_t kMaxDumpLine = 4096;

struct DumpDevice {
  std::string bdf;          // normalised "dddd:bb:dd.f"
  std::string description;  // the rest of the header line
  size_t line = 0;          // 1-based line of the header
  std::vector<uint8_t> bytes = std::vector<uint8_t>(kConfigSpaceSize, 0xff);
  std::vector<uint8_t> known = std::vector<uint8_t>(kConfigSpaceSize, 0);
  size_t rows = 0;

  ConfigBytes config() const;
  // Offsets of 16-byte rows missing below the highest row present.
  std::vector<size_t> missing_rows() const;
};

struct DumpFile {
  std::vector<DumpDevice> devices;  // in file order; only devices with hex rows
  std::vector<std::string> notes;   // skipped duplicates, stripped quoting, ...
};

// Errors: kTooLarge (file or line over the limits), kCorruptData (a hex row
// that is malformed, out of range, or outside any device; the message names
// the line). A file with no hex rows at all is kNotFound: it has nothing to decode.
Expected<DumpFile> parse_lspci_dump(std::string_view text);

// The devices written back in the plain format libpci's dump reader expects,
// only known bytes, one blank line after each device.
std::string to_lspci_dump(const DumpFile& dump);

// Strips mail quoting ("> ", ">> ", "> > ") and a trailing CR from a line.
std::string_view strip_quoting(std::string_view line);

// Parses "bb:dd.f" or "dddd:bb:dd.f" at the start of `text` followed by a
// space or the end; returns the normalised form or "" if it is not one.
std::string parse_bdf_prefix(std::string_view text, size_t* consumed = nullptr);

}  // namespace ringserve::preflight
