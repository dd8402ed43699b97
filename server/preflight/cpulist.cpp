#include "preflight/cpulist.h"

#include <charconv>

namespace ringserve::preflight {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

bool parse_int(std::string_view s, int* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && *out >= 0 && *out < kMaxCpus;
}

}  // namespace

Expected<std::set<int>> parse_cpulist(std::string_view text) {
  text = trim(text);
  std::set<int> cpus;
  if (text.empty()) return cpus;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
    size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_int(item, &lo)) {
        return make_error(Errc::kCorruptData, "cpu list \"{}\": bad item \"{}\"", text, item);
      }
      hi = lo;
    } else if (!parse_int(item.substr(0, dash), &lo) || !parse_int(item.substr(dash + 1), &hi) ||
               hi < lo) {
      return make_error(Errc::kCorruptData, "cpu list \"{}\": bad range \"{}\"", text, item);
    }
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return cpus;
}

Expected<std::set<int>> parse_cpumask(std::string_view text) {
  text = trim(text);
  std::set<int> cpus;
  int bit = 0;
  for (size_t i = text.size(); i-- > 0;) {
    char c = text[i];
    if (c == ',') continue;
    int v = 0;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      return make_error(Errc::kCorruptData, "cpu mask \"{}\": bad character '{}'", text, c);
    }
    for (int b = 0; b < 4; ++b) {
      if (v & (1 << b)) cpus.insert(bit + b);
    }
    bit += 4;
    if (bit > kMaxCpus) return make_error(Errc::kCorruptData, "cpu mask \"{}\" is too long", text);
  }
  return cpus;
}

std::string format_cpulist(const std::set<int>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    int lo = *it, hi = *it;
    ++it;
    while (it != cpus.end() && *it == hi + 1) hi = *it++;
    if (!out.empty()) out += ',';
    out += lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
  }
  return out;
}

}  // namespace ringserve::preflight
