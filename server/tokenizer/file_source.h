// Reads a tokenizer.json from disk, inflating it when it is gzip (detected
// by its magic bytes, not its name). Sizes are bounded so that a corrupt or
// hostile file (a zip bomb) is an error instead of an out-of-memory kill.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "ringserve/common/expected.h"

namespace ringserve::tokenizer {

// Real tokenizer.json files are 7-20 MB; 512 MiB leaves a wide margin.
inline constexpr size_t kMaxTokenizerJsonBytes = size_t{512} << 20;

Expected<std::string> read_tokenizer_file(const std::filesystem::path& path,
                                          size_t max_bytes = kMaxTokenizerJsonBytes);

// Inflates a gzip or zlib stream held in memory.
Expected<std::string> gunzip(std::string_view compressed, size_t max_bytes,
                             std::string_view source);

}  // namespace ringserve::tokenizer
