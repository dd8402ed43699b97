#include "model/tensor_source.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ringserve::model {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxIndexBytes = 64u << 20;

Expected<std::map<std::string, std::string>> read_weight_map(
    const std::filesystem::path& index_path) {
  const std::string source = index_path.filename().string();
  std::error_code ec;
  auto size = std::filesystem::file_size(index_path, ec);
  if (ec) return make_error(Errc::kIoError, "{}: {}", index_path.string(), ec.message());
  if (size > kMaxIndexBytes)
    return make_error(Errc::kTooLarge, "{}: {} bytes is too large for an index", source, size);
  std::ifstream in(index_path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in) return make_error(Errc::kIoError, "{}: read failed", index_path.string());
  std::string text = ss.str();
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return make_error(Errc::kCorruptData, "{}: not a JSON object", source);
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object())
    return make_error(Errc::kCorruptData, "{}: missing object \"weight_map\"", source);
  std::map<std::string, std::string> map;
  for (const auto& [tensor, file] : wm->items()) {
    if (!file.is_string())
      return make_error(Errc::kCorruptData, "{}: tensor {}: shard name must be a string", source,
                        tensor);
    const auto& name = file.get_ref<const std::string&>();
    // Shards are plain names next to the index: never a path that escapes it.
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos)
      return make_error(Errc::kCorruptData,
                        "{}: tensor {}: shard name \"{}\" is not a plain file name", source, tensor,
                        name);
    map.emplace(tensor, name);
  }
  if (map.empty()) return make_error(Errc::kCorruptData, "{}: weight_map is empty", source);
  return map;
}

}  // namespace

uint64_t TensorView::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::string TensorView::where() const {
  return fmt::format("{}: tensor {}", file, name);
}

TensorSource::TensorSource() = default;
TensorSource::TensorSource(TensorSource&&) noexcept = default;
TensorSource& TensorSource::operator=(TensorSource&&) noexcept = default;
TensorSource::~TensorSource() = default;

Status TensorSource::add_shard(const std::filesystem::path& path,
                               const std::map<std::string, std::string>* only) {
  auto shard = std::make_unique<Shard>();
  shard->name = path.filename().string();
  shard->file = RS_TRY(MappedFile::open(path));
  auto bytes = shard->file.bytes();
  shard->header = RS_TRY(parse_safetensors_header(bytes, bytes.size(), shard->name));
  if (only != nullptr) {
    // A shard may carry tensors the index assigns elsewhere; only the index's
    // choice is exposed so a name resolves to exactly one file.
    std::erase_if(shard->header.tensors, [&](const TensorInfo& t) {
      auto it = only->find(t.name);
      return it == only->end() || it->second != shard->name;
    });
  }
  if (shards_.empty()) metadata_ = shard->header.metadata;
  shards_.push_back(std::move(shard));
  return {};
}

const std::filesystem::path& TensorSource::shard_path(size_t shard) const {
  return shards_.at(shard)->file.path();
}

void TensorSource::build_views() {
  views_.clear();
  for (size_t i = 0; i < shards_.size(); ++i) {
    const auto& shard = shards_[i];
    auto data = shard->file.bytes().subspan(shard->header.data_offset);
    for (const auto& t : shard->header.tensors) {
      TensorView v;
      v.shard = i;
      v.file_offset = shard->header.data_offset + t.begin;
      v.name = t.name;
      v.dtype = t.dtype;
      v.shape = t.shape;
      v.bytes = data.subspan(t.begin, t.end - t.begin);
      v.file = shard->name;
      views_.push_back(v);
    }
  }
  std::sort(views_.begin(), views_.end(),
            [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
}

Expected<TensorSource> TensorSource::open_file(const std::filesystem::path& path) {
  TensorSource source;
  RS_TRY_STATUS(source.add_shard(path, nullptr));
  source.description_ = path.filename().string();
  source.build_views();
  return source;
}

Expected<TensorSource> TensorSource::open_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  auto single = dir / "model.safetensors";
  auto index = dir / "model.safetensors.index.json";
  if (std::filesystem::exists(single, ec)) return open_file(single);
  if (!std::filesystem::exists(index, ec))
    return make_error(Errc::kNotFound,
                      "{}: neither model.safetensors nor model.safetensors.index.json found",
                      dir.string());
  auto map = RS_TRY(read_weight_map(index));
  std::set<std::string> files;
  for (const auto& [tensor, file] : map) files.insert(file);
  TensorSource source;
  for (const auto& file : files) RS_TRY_STATUS(source.add_shard(dir / file, &map));
  source.build_views();
  for (const auto& [tensor, file] : map) {
    if (source.find(tensor) == nullptr)
      return make_error(Errc::kCorruptData,
                        "{}: tensor {}: listed in model.safetensors.index.json but absent", file,
                        tensor);
  }
  source.description_ = fmt::format("model.safetensors.index.json ({} shards)", files.size());
  return source;
}

const TensorView* TensorSource::find(std::string_view name) const {
  auto it = std::lower_bound(views_.begin(), views_.end(), name,
                             [](const TensorView& v, std::string_view n) { return v.name < n; });
  if (it == views_.end() || it->name != name) return nullptr;
  return &*it;
}

Expected<TensorView> TensorSource::get(std::string_view name) const {
  if (const auto* v = find(name)) return *v;
  return make_error(Errc::kNotFound, "{}: tensor {}: missing", description_, name);
}

uint64_t TensorSource::total_bytes() const {
  uint64_t total = 0;
  for (const auto& v : views_) total += v.bytes.size();
  return total;
}

void TensorSource::advise_sequential() const {
  for (const auto& shard : shards_) shard->file.advise_sequential();
}

}  // namespace ringserve::model
