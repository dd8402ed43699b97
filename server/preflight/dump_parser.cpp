#include "preflight/dump_parser.h"

#include <cctype>

#include <fmt/format.h>

namespace ringserve::preflight {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads exactly `digits` hex digits from `s` at `pos`.
bool read_hex(std::string_view s, size_t pos, size_t digits, unsigned* out) {
  if (pos + digits > s.size()) return false;
  unsigned v = 0;
  for (size_t i = 0; i < digits; ++i) {
    int h = hex_value(s[pos + i]);
    if (h < 0) return false;
    v = v * 16 + static_cast<unsigned>(h);
  }
  *out = v;
  return true;
}

size_t count_hex(std::string_view s, size_t pos) {
  size_t n = 0;
  while (pos + n < s.size() && hex_value(s[pos + n]) >= 0) ++n;
  return n;
}

// A hex row is "<2-8 hex digits>: xx xx ..." starting in column 0.
// Returns false when the line is not shaped like a row at all; sets `error`
// when it is shaped like one but broken.
bool parse_row(std::string_view line, unsigned* offset, std::vector<uint8_t>* values,
               std::string* error) {
  const size_t digits = count_hex(line, 0);
  if (digits < 2 || digits > 8 || line.size() < digits + 1 || line[digits] != ':') return false;
  // "00:06.0 ..." is a device header, not a row: a row's colon is followed by a space.
  if (digits + 1 < line.size() && line[digits + 1] != ' ') return false;
  unsigned off = 0;
  read_hex(line, 0, digits, &off);
  values->clear();
  size_t pos = digits + 1;
  while (pos < line.size()) {
    if (line[pos] != ' ') {
      *error = fmt::format("expected a space at column {}", pos + 1);
      return true;
    }
    ++pos;
    if (pos == line.size()) break;  // one trailing space is harmless
    unsigned byte = 0;
    if (!read_hex(line, pos, 2, &byte) || (pos + 2 < line.size() && line[pos + 2] != ' ')) {
      *error = fmt::format("expected two hex digits at column {}", pos + 1);
      return true;
    }
    values->push_back(static_cast<uint8_t>(byte));
    pos += 2;
  }
  if (values->empty()) {
    *error = "a row with no bytes";
    return true;
  }
  if (off >= kConfigSpaceSize || values->size() > kConfigSpaceSize - off) {
    *error = fmt::format("bytes 0x{:x}..0x{:x} lie outside the 4096-byte config space", off,
                         off + values->size() - 1);
    return true;
  }
  *offset = off;
  return true;
}

}  // namespace

ConfigBytes DumpDevice::config() const {
  return ConfigBytes(bytes, known);
}

std::vector<size_t> DumpDevice::missing_rows() const {
  size_t last = 0;
  for (size_t i = 0; i < known.size(); ++i) {
    if (known[i]) last = i;
  }
  std::vector<size_t> missing;
  for (size_t row = 0; row <= last; row += 16) {
    bool any = false;
    for (size_t i = row; i < row + 16 && i < known.size(); ++i) any = any || known[i];
    if (!any) missing.push_back(row);
  }
  return missing;
}

std::string_view strip_quoting(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  while (!line.empty() && line.front() == '>') {
    line.remove_prefix(1);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  }
  return line;
}

std::string parse_bdf_prefix(std::string_view text, size_t* consumed) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  size_t pos = 0;
  const size_t first = count_hex(text, 0);
  if (first >= 4 && first <= 6 && text.size() > first && text[first] == ':') {
    read_hex(text, 0, first, &domain);
    pos = first + 1;
  }
  if (!read_hex(text, pos, 2, &bus) || pos + 2 >= text.size() || text[pos + 2] != ':') return "";
  pos += 3;
  if (!read_hex(text, pos, 2, &dev) || pos + 2 >= text.size() || text[pos + 2] != '.') return "";
  pos += 3;
  if (pos >= text.size() || text[pos] < '0' || text[pos] > '7') return "";
  fn = static_cast<unsigned>(text[pos] - '0');
  ++pos;
  if (pos < text.size() && text[pos] != ' ') return "";
  if (dev > 0x1f) return "";
  if (consumed) *consumed = pos;
  return fmt::format("{:04x}:{:02x}:{:02x}.{}", domain, bus, dev, fn);
}

Expected<DumpFile> parse_lspci_dump(std::string_view text) {
  if (text.size() > kMaxDumpBytes) {
    return make_error(Errc::kTooLarge, "dump is {} bytes, more than the {} accepted", text.size(),
                      kMaxDumpBytes);
  }
  DumpFile out;
  std::vector<DumpDevice> open;  // the device being filled is open.back()
  bool in_device = false;
  bool quoted = false;
  size_t line_no = 0;
  std::vector<uint8_t> values;
  std::string error;

  auto close_device = [&] {
    if (!in_device) return;
    in_device = false;
    DumpDevice dev = std::move(open.back());
    open.pop_back();
    if (dev.rows == 0) return;  // a name-only line (an `lspci` listing), nothing to decode
    for (const auto& existing : out.devices) {
      if (existing.bdf == dev.bdf) {
        out.notes.push_back(
            fmt::format("line {}: a second dump of {} was ignored", dev.line, dev.bdf));
        return;
      }
    }
    out.devices.push_back(std::move(dev));
  };

  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (raw.size() > kMaxDumpLine) {
      return make_error(Errc::kTooLarge, "line {} is {} characters long (limit {})", line_no,
                        raw.size(), kMaxDumpLine);
    }
    if (!raw.empty() && raw.front() == '>') quoted = true;
    std::string_view line = strip_quoting(raw);
    if (line.find_first_not_of(" \t") == std::string_view::npos) {
      close_device();
      if (end == text.size()) break;
      continue;
    }
    size_t consumed = 0;
    std::string bdf = parse_bdf_prefix(line, &consumed);
    if (!bdf.empty()) {
      close_device();
      DumpDevice dev;
      dev.bdf = bdf;
      dev.line = line_no;
      std::string_view rest = line.substr(consumed);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      dev.description = std::string(rest);
      open.push_back(std::move(dev));
      in_device = true;
      if (end == text.size()) break;
      continue;
    }
    unsigned offset = 0;
    error.clear();
    if (parse_row(line, &offset, &values, &error)) {
      if (!error.empty()) {
        return make_error(Errc::kCorruptData, "line {}: malformed hex row: {}", line_no, error);
      }
      if (!in_device) {
        return make_error(Errc::kCorruptData,
                          "line {}: a hex row before any device line (\"bb:dd.f ...\")", line_no);
      }
      DumpDevice& dev = open.back();
      for (size_t i = 0; i < values.size(); ++i) {
        dev.bytes[offset + i] = values[i];
        dev.known[offset + i] = 1;
      }
      ++dev.rows;
    }
    if (end == text.size()) break;
  }
  close_device();
  if (quoted) out.notes.push_back("mail quoting ('> ') was stripped from the lines");
  if (out.devices.empty()) {
    return make_error(Errc::kNotFound, "no hex dump rows found (expected `lspci -x` output)");
  }
  for (auto& dev : out.devices) {
    auto missing = dev.missing_rows();
    if (!missing.empty()) {
      std::string list;
      for (size_t row : missing) list += fmt::format("{}{:02x}", list.empty() ? "" : ", ", row);
      out.notes.push_back(fmt::format("{}: rows missing from the dump: {}", dev.bdf, list));
    }
  }
  return out;
}

std::string to_lspci_dump(const DumpFile& dump) {
  std::string out;
  for (const auto& dev : dump.devices) {
    out += fmt::format("{} {}\n", dev.bdf, dev.description.empty() ? "device" : "device");
    size_t i = 0;
    while (i < dev.known.size()) {
      if (!dev.known[i]) {
        ++i;
        continue;
      }
      // One line per run of known bytes, at most 16 per line.
      size_t j = i;
      out += fmt::format("{:03x}:", i);
      while (j < dev.known.size() && dev.known[j] && j - i < 16) {
        out += fmt::format(" {:02x}", dev.bytes[j]);
        ++j;
      }
      out += '\n';
      i = j;
    }
    out += '\n';
  }
  return out;
}

}  // namespace ringserve::preflight
