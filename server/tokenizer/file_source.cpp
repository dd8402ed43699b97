#include "tokenizer/file_source.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace ringserve::tokenizer {

Expected<std::string> gunzip(std::string_view compressed, size_t max_bytes,
                             std::string_view source) {
  z_stream zs{};
  // 15 + 32: accept both gzip and zlib headers.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) {
    return make_error(Errc::kInternal, "{}: inflateInit2 failed", source);
  }
  std::string out;
  out.resize(std::min<size_t>(max_bytes, std::max<size_t>(compressed.size() * 4, 1 << 16)));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  size_t in_left = compressed.size();
  size_t produced = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (produced == out.size()) {
      if (out.size() >= max_bytes) {
        inflateEnd(&zs);
        return make_error(Errc::kTooLarge, "{}: inflates to more than {} bytes", source, max_bytes);
      }
      out.resize(std::min(max_bytes, out.size() * 2));
    }
    // zlib counts in uInt; feed at most 1 GiB per call.
    const auto in_chunk = static_cast<uInt>(std::min<size_t>(in_left, 1u << 30));
    zs.avail_in = in_chunk;
    const auto out_chunk = static_cast<uInt>(std::min<size_t>(out.size() - produced, 1u << 30));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = out_chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    in_left -= in_chunk - zs.avail_in;
    produced += out_chunk - zs.avail_out;
    if (rc == Z_BUF_ERROR && in_left == 0 && produced < out.size()) {
      inflateEnd(&zs);
      return make_error(Errc::kCorruptData, "{}: gzip stream is truncated", source);
    }
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg ? zs.msg : "inflate error";
      inflateEnd(&zs);
      return make_error(Errc::kCorruptData, "{}: gzip: {}", source, msg);
    }
  }
  inflateEnd(&zs);
  out.resize(produced);
  return out;
}

Expected<std::string> read_tokenizer_file(const std::filesystem::path& path, size_t max_bytes) {
  const std::string name = path.string();
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) {
    return make_error(ec == std::errc::no_such_file_or_directory ? Errc::kNotFound : Errc::kIoError,
                      "{}: {}", name, ec.message());
  }
  if (size > max_bytes) {
    return make_error(Errc::kTooLarge, "{}: {} bytes, more than the limit of {}", name, size,
                      max_bytes);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::kIoError, "{}: cannot open: {}", name, std::strerror(errno));
  std::string data(size, '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<size_t>(in.gcount()) != size) {
    return make_error(Errc::kIoError, "{}: short read", name);
  }
  const bool is_gzip =
      size >= 2 && static_cast<uint8_t>(data[0]) == 0x1F && static_cast<uint8_t>(data[1]) == 0x8B;
  if (is_gzip) return gunzip(data, max_bytes, name);
  return data;
}

}  // namespace ringserve::tokenizer
