#include "offload/byte_size.h"

#include <array>
#include <cctype>

#include <fmt/format.h>

namespace ringserve::offload {
namespace {

constexpr uint64_t kMaxBytes = uint64_t{1} << 62;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Multiplier for a unit suffix; 0 when unknown.
uint64_t unit_multiplier(std::string_view unit_text) {
  const std::string u = lower(unit_text);
  struct Unit {
    const char* name;
    uint64_t mult;
  };
  static constexpr std::array<Unit, 17> kUnits{{
      {"", 1},
      {"b", 1},
      {"k", uint64_t{1} << 10},
      {"kib", uint64_t{1} << 10},
      {"kb", 1000},
      {"m", uint64_t{1} << 20},
      {"mib", uint64_t{1} << 20},
      {"mb", 1000 * 1000},
      {"g", uint64_t{1} << 30},
      {"gib", uint64_t{1} << 30},
      {"gb", 1000 * 1000 * 1000},
      {"t", uint64_t{1} << 40},
      {"tib", uint64_t{1} << 40},
      {"tb", uint64_t{1000} * 1000 * 1000 * 1000},
      {"ki", uint64_t{1} << 10},
      {"mi", uint64_t{1} << 20},
      {"gi", uint64_t{1} << 30},
  }};
  for (const Unit& unit : kUnits)
    if (u == unit.name) return unit.mult;
  return 0;
}

}  // namespace

Expected<uint64_t> parse_byte_size(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return make_error(Errc::kInvalidArgument,
                      "size '{}': {} (expected e.g. 8GiB, 7.5G, 8000MiB or a byte count)", text,
                      why);
  };
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) return bad("empty");
  if (s.front() == '-' || s.front() == '+') return bad("a sign is not allowed");

  size_t i = 0;
  unsigned __int128 whole = 0;
  size_t whole_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    whole = whole * 10 + static_cast<unsigned>(s[i] - '0');
    if (whole > kMaxBytes) return bad("too large");
    ++whole_digits;
    ++i;
  }
  unsigned __int128 frac = 0, frac_scale = 1;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (frac_digits < 18) {  // further digits cannot change a whole byte count
        frac = frac * 10 + static_cast<unsigned>(s[i] - '0');
        frac_scale *= 10;
      }
      ++frac_digits;
      ++i;
    }
    if (frac_digits == 0) return bad("no digits after the decimal point");
  }
  if (whole_digits == 0) return bad("no digits");
  std::string_view unit = s.substr(i);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front())))
    unit.remove_prefix(1);
  const uint64_t mult = unit_multiplier(unit);
  if (mult == 0) return bad(fmt::format("unknown unit '{}'", unit));
  if (mult == 1 && frac != 0) return bad("a fraction of a byte");

  const unsigned __int128 bytes = whole * mult + frac * mult / frac_scale;
  if (bytes > kMaxBytes) return bad("too large");
  return static_cast<uint64_t>(bytes);
}

std::string format_bytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= 1000ull * 1000 * 1000) return fmt::format("{:.2f} GB", b / 1e9);
  if (bytes >= 1000ull * 1000) return fmt::format("{:.1f} MB", b / 1e6);
  if (bytes >= 1000) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{} B", bytes);
}

}  // namespace ringserve::offload
