#include "model/package_files.h"

#include <zlib.h>

#include <algorithm>

#include <nlohmann/json.hpp>

namespace ringserve::model {
namespace {

constexpr size_t kMaxTokenizerBytes = 256u << 20;

}  // namespace

const std::vector<const char*>& companion_file_names() {
  static const std::vector<const char*> names{"tokenizer.json", "tokenizer_config.json",
                                              "generation_config.json", "special_tokens_map.json"};
  return names;
}

Expected<std::vector<std::filesystem::path>> copy_companion_files(const std::filesystem::path& from,
                                                                  const std::filesystem::path& to) {
  std::vector<std::filesystem::path> copied;
  for (const char* name : companion_file_names()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(from / name, ec)) continue;
    std::filesystem::copy_file(from / name, to / name,
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec)
      return make_error(Errc::kIoError, "copying {} to {}: {}", (from / name).string(), to.string(),
                        ec.message());
    copied.push_back(to / name);
  }
  return copied;
}

Expected<std::string> read_tokenizer_text(const std::filesystem::path& path) {
  // gzread reads plain files transparently, so one path serves both.
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return make_error(Errc::kNotFound, "{}: cannot open", path.string());
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxTokenizerBytes) {
      gzclose(f);
      return make_error(Errc::kTooLarge, "{}: more than {} bytes", path.string(),
                        kMaxTokenizerBytes);
    }
  }
  int err = 0;
  const char* msg = n < 0 ? gzerror(f, &err) : nullptr;
  std::string message = msg ? msg : "";
  gzclose(f);
  if (n < 0) return make_error(Errc::kCorruptData, "{}: {}", path.string(), message);
  return text;
}

Expected<int64_t> tokenizer_id_bound(std::string_view tokenizer_json, std::string_view source) {
  using nlohmann::json;
  json j = json::parse(tokenizer_json.begin(), tokenizer_json.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return make_error(Errc::kCorruptData, "{}: not a JSON object", source);
  int64_t bound = 0;
  auto note = [&](const json& id) {
    if (id.is_number_integer()) bound = std::max(bound, id.get<int64_t>() + 1);
  };
  if (auto m = j.find("model"); m != j.end() && m->is_object()) {
    if (auto v = m->find("vocab"); v != m->end() && v->is_object())
      for (const auto& [token, id] : v->items()) note(id);
  }
  if (auto a = j.find("added_tokens"); a != j.end() && a->is_array()) {
    for (const auto& t : *a)
      if (t.is_object() && t.contains("id")) note(t["id"]);
  }
  if (bound == 0) return make_error(Errc::kCorruptData, "{}: no token ids found", source);
  return bound;
}

}  // namespace ringserve::model
