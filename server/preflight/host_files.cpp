#include "preflight/host_files.h"

#include <cstdlib>
#include <fstream>

namespace ringserve::preflight {

std::optional<std::string> read_attr(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(64 * 1024, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::optional<double> parse_link_speed(std::string_view text) {
  std::string s(text.substr(0, 32));
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !(v > 0) || v > 1000) return std::nullopt;
  return v;
}

}  // namespace ringserve::preflight
