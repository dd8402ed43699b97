#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ringserve::model {
namespace {

using nlohmann::json;

constexpr size_t kMaxTensors = 1u << 20;
constexpr size_t kMaxNameBytes = 1024;
constexpr size_t kMaxRank = 8;

// Rejects nesting deeper than kMaxSafetensorsJsonDepth before the JSON parser
// sees the text, so a header of a million '[' costs one linear scan.
bool depth_ok(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxSafetensorsJsonDepth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

// Names are printed in errors; keep hostile bytes out of logs.
std::string printable(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 120)) {
    auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (name.size() > 120) out += "...";
  return out;
}

bool checked_mul(uint64_t a, uint64_t b, uint64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}

Expected<uint64_t> get_u64(const json& v, std::string_view source, const std::string& tensor,
                           const char* what) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    return make_error(Errc::kCorruptData, "{}: tensor {}: {} must be non-negative integers", source,
                      tensor, what);
  return v.get<uint64_t>();
}

Expected<TensorInfo> parse_entry(const std::string& name, const json& v, std::string_view source) {
  std::string shown = printable(name);
  if (name.empty() || name.size() > kMaxNameBytes)
    return make_error(Errc::kCorruptData, "{}: tensor name of {} bytes is not allowed", source,
                      name.size());
  if (!v.is_object())
    return make_error(Errc::kCorruptData, "{}: tensor {}: entry must be an object", source, shown);
  TensorInfo t;
  t.name = name;

  auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string())
    return make_error(Errc::kCorruptData, "{}: tensor {}: missing string \"dtype\"", source, shown);
  auto parsed = parse_dtype(dt->get_ref<const std::string&>());
  if (!parsed)
    return make_error(Errc::kUnsupported, "{}: tensor {}: unknown dtype \"{}\"", source, shown,
                      printable(dt->get_ref<const std::string&>()));
  t.dtype = *parsed;

  auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array())
    return make_error(Errc::kCorruptData, "{}: tensor {}: missing array \"shape\"", source, shown);
  if (sh->size() > kMaxRank)
    return make_error(Errc::kCorruptData, "{}: tensor {}: rank {} above {}", source, shown,
                      sh->size(), kMaxRank);
  uint64_t numel = 1;
  for (const auto& d : *sh) {
    uint64_t dim = RS_TRY(get_u64(d, source, shown, "shape dimensions"));
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        !checked_mul(numel, dim, numel))
      return make_error(Errc::kCorruptData, "{}: tensor {}: shape overflows", source, shown);
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  uint64_t nbytes = 0;
  if (!checked_mul(numel, dtype_size(t.dtype), nbytes))
    return make_error(Errc::kCorruptData, "{}: tensor {}: byte size overflows", source, shown);

  auto off = v.find("data_offsets");
  if (off == v.end() || !off->is_array() || off->size() != 2)
    return make_error(Errc::kCorruptData, "{}: tensor {}: \"data_offsets\" must be [begin, end]",
                      source, shown);
  t.begin = RS_TRY(get_u64((*off)[0], source, shown, "data_offsets"));
  t.end = RS_TRY(get_u64((*off)[1], source, shown, "data_offsets"));
  if (t.end < t.begin)
    return make_error(Errc::kCorruptData, "{}: tensor {}: data_offsets [{}, {}] end before begin",
                      source, shown, t.begin, t.end);
  if (t.end - t.begin != nbytes)
    return make_error(Errc::kCorruptData,
                      "{}: tensor {}: data_offsets span {} bytes but {} {} needs {} bytes", source,
                      shown, t.end - t.begin, dtype_name(t.dtype), shape_string(t.shape), nbytes);
  return t;
}

}  // namespace

uint64_t TensorInfo::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::string shape_string(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Expected<SafetensorsHeader> parse_safetensors_header(std::span<const std::byte> prefix,
                                                     uint64_t file_size, std::string_view source) {
  if (file_size < 8 || prefix.size() < 8)
    return make_error(Errc::kCorruptData, "{}: {} bytes is too short for a safetensors file",
                      source, file_size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(prefix[static_cast<size_t>(i)]);
  if (n > kMaxSafetensorsHeaderBytes)
    return make_error(Errc::kTooLarge, "{}: header length {} above the {} byte limit", source, n,
                      kMaxSafetensorsHeaderBytes);
  if (n > file_size - 8)
    return make_error(Errc::kCorruptData,
                      "{}: header length {} exceeds the file ({} bytes): truncated?", source, n,
                      file_size);
  if (prefix.size() < 8 + n)
    return make_error(Errc::kInvalidArgument, "{}: {} header bytes given, {} needed", source,
                      prefix.size() - 8, n);
  std::string_view text(reinterpret_cast<const char*>(prefix.data()) + 8, static_cast<size_t>(n));
  if (text.empty() || text.front() != '{')
    return make_error(Errc::kCorruptData, "{}: header is not a JSON object", source);
  if (!depth_ok(text))
    return make_error(Errc::kCorruptData, "{}: header JSON nested deeper than {}", source,
                      kMaxSafetensorsJsonDepth);

  // Duplicate keys would silently shadow each other in the parsed object;
  // the parser callback sees every key of the top-level object.
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  json j = json::parse(text.begin(), text.end(), on_event, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return make_error(Errc::kCorruptData, "{}: header is not valid JSON", source);
  if (!j.is_object())
    return make_error(Errc::kCorruptData, "{}: header is not a JSON object", source);
  if (!duplicate.empty())
    return make_error(Errc::kCorruptData, "{}: tensor {}: listed twice in the header", source,
                      printable(duplicate));
  if (j.size() > kMaxTensors)
    return make_error(Errc::kTooLarge, "{}: {} header entries above the limit of {}", source,
                      j.size(), kMaxTensors);

  SafetensorsHeader h;
  h.data_offset = 8 + n;
  h.data_size = file_size - h.data_offset;
  h.tensors.reserve(j.size());
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        return make_error(Errc::kCorruptData, "{}: __metadata__ must be an object", source);
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          return make_error(Errc::kCorruptData, "{}: __metadata__.{} must be a string", source,
                            printable(mk));
        h.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    TensorInfo t = RS_TRY(parse_entry(key, value, source));
    if (t.end > h.data_size)
      return make_error(
          Errc::kCorruptData,
          "{}: tensor {}: data_offsets [{}, {}] beyond the {} byte data section: truncated?",
          source, printable(t.name), t.begin, t.end, h.data_size);
    h.tensors.push_back(std::move(t));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < h.tensors.size(); ++i) {
    const auto& prev = h.tensors[i - 1];
    const auto& cur = h.tensors[i];
    if (cur.begin < prev.end)
      return make_error(
          Errc::kCorruptData, "{}: tensor {}: bytes [{}, {}) overlap tensor {} [{}, {})", source,
          printable(cur.name), cur.begin, cur.end, printable(prev.name), prev.begin, prev.end);
  }
  return h;
}

}  // namespace ringserve::model
