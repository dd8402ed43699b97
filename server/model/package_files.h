// The files a model directory carries besides weights and config.json:
// tokenizer.json (+ tokenizer_config.json with the chat template,
// generation_config.json, special_tokens_map.json). `convert` copies them so
// a converted directory is a complete model for every ringserve command.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "ringserve/common/expected.h"

namespace ringserve::model {

// Names copied verbatim from a source model directory when present.
const std::vector<const char*>& companion_file_names();

// Copies every companion file present in `from` into `to`; returns the names
// copied.
Expected<std::vector<std::filesystem::path>> copy_companion_files(const std::filesystem::path& from,
                                                                  const std::filesystem::path& to);

// Reads a tokenizer.json, plain or gzip-compressed, into text (bounded at
// 256 MB decompressed).
Expected<std::string> read_tokenizer_text(const std::filesystem::path& path);

// One more than the highest token id a tokenizer.json defines (model.vocab
// and added_tokens): the vocabulary size a model needs to serve it.
Expected<int64_t> tokenizer_id_bound(std::string_view tokenizer_json, std::string_view source);

}  // namespace ringserve::model
