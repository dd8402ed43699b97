#include "model/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace ringserve::model {
namespace {

using nlohmann::json;

Error io_error(const std::filesystem::path& path, const char* what) {
  return make_error(Errc::kIoError, "{}: {}: {}", path.string(), what, std::strerror(errno));
}

}  // namespace

Expected<SafetensorsWriter> SafetensorsWriter::create(
    const std::filesystem::path& path, std::vector<TensorDecl> tensors,
    const std::map<std::string, std::string>& metadata) {
  SafetensorsWriter w;
  w.path_ = path;
  w.partial_path_ = path;
  w.partial_path_ += ".partial";
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second)
      return make_error(Errc::kInvalidArgument,
                        "{}: tensor name \"{}\" is empty, reserved or repeated", path.string(),
                        t.name);
    uint64_t bytes = dtype_size(t.dtype);
    for (int64_t d : t.shape) {
      if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
        return make_error(Errc::kInvalidArgument, "{}: tensor {}: bad shape", path.string(),
                          t.name);
    }
    uint64_t end = 0;
    if (__builtin_add_overflow(offset, bytes, &end))
      return make_error(Errc::kInvalidArgument, "{}: tensor {}: file size overflows", path.string(),
                        t.name);
    header[t.name] = {{"dtype", std::string(dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, end}}};
    w.ends_.push_back(end);
    offset = end;
  }
  w.data_size_ = offset;
  w.tensors_ = std::move(tensors);

  // Names come from our own callers, but dump() throws on invalid UTF-8;
  // replace keeps errors as values.
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  uint8_t len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));

  w.fd_ = ::open(w.partial_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w.fd_ < 0) return io_error(w.partial_path_, "open");
  RS_TRY_STATUS(w.write_all(len, sizeof len));
  RS_TRY_STATUS(w.write_all(text.data(), text.size()));
  return w;
}

SafetensorsWriter::SafetensorsWriter(SafetensorsWriter&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      partial_path_(std::move(other.partial_path_)),
      tensors_(std::move(other.tensors_)),
      ends_(std::move(other.ends_)),
      data_size_(other.data_size_),
      written_(other.written_) {}

SafetensorsWriter& SafetensorsWriter::operator=(SafetensorsWriter&& other) noexcept {
  if (this != &other) {
    abandon();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    partial_path_ = std::move(other.partial_path_);
    tensors_ = std::move(other.tensors_);
    ends_ = std::move(other.ends_);
    data_size_ = other.data_size_;
    written_ = other.written_;
  }
  return *this;
}

SafetensorsWriter::~SafetensorsWriter() {
  abandon();
}

void SafetensorsWriter::abandon() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    std::error_code ec;
    std::filesystem::remove(partial_path_, ec);
  }
}

Status SafetensorsWriter::write_all(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(partial_path_, "write");
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return {};
}

Status SafetensorsWriter::append(std::span<const std::byte> bytes) {
  if (fd_ < 0) return make_error(Errc::kInvalidArgument, "{}: writer is closed", path_.string());
  if (bytes.size() > data_size_ - written_)
    return make_error(Errc::kInvalidArgument,
                      "{}: {} bytes appended past the declared {} byte data section",
                      path_.string(), bytes.size(), data_size_);
  RS_TRY_STATUS(write_all(bytes.data(), bytes.size()));
  written_ += bytes.size();
  return {};
}

std::string_view SafetensorsWriter::next_tensor() const {
  for (size_t i = 0; i < ends_.size(); ++i) {
    if (written_ < ends_[i]) return tensors_[i].name;
  }
  return {};
}

Status SafetensorsWriter::write_tensor(std::string_view name, std::span<const std::byte> bytes) {
  size_t i = 0;
  while (i < tensors_.size() && tensors_[i].name != name) ++i;
  if (i == tensors_.size())
    return make_error(Errc::kInvalidArgument, "{}: tensor {} was not declared", path_.string(),
                      name);
  uint64_t begin = i == 0 ? 0 : ends_[i - 1];
  if (written_ != begin)
    return make_error(Errc::kInvalidArgument,
                      "{}: tensor {} written out of declaration order (next is {})", path_.string(),
                      name, next_tensor());
  if (bytes.size() != ends_[i] - begin)
    return make_error(Errc::kInvalidArgument, "{}: tensor {}: {} bytes given, {} declared",
                      path_.string(), name, bytes.size(), ends_[i] - begin);
  return append(bytes);
}

Status SafetensorsWriter::finish() {
  if (fd_ < 0) return make_error(Errc::kInvalidArgument, "{}: writer is closed", path_.string());
  if (written_ != data_size_)
    return make_error(Errc::kInvalidArgument,
                      "{}: {} of {} data bytes written (tensor {} incomplete)", path_.string(),
                      written_, data_size_, next_tensor());
  if (::close(std::exchange(fd_, -1)) != 0) return io_error(partial_path_, "close");
  std::error_code ec;
  std::filesystem::rename(partial_path_, path_, ec);
  if (ec) return make_error(Errc::kIoError, "{}: rename: {}", path_.string(), ec.message());
  return {};
}

Status write_safetensors_index(const std::filesystem::path& path,
                               const std::map<std::string, std::string>& weight_map,
                               uint64_t total_size) {
  json j = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
  std::string text = j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path, "open");
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = io_error(path, "write");
      ::close(fd);
      return e;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return io_error(path, "close");
  return {};
}

}  // namespace ringserve::model
