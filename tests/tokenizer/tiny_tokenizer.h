// Builds small tokenizer.json documents in memory: a byte-level vocab of all
// 256 bytes plus chosen merges and added tokens, so tests can pin down one
// behavior at a time without the 150k-token fixture.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace ringserve::testing {

struct TinyAdded {
  int id;
  std::string content;
  bool special = true;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

// Merges are given in byte-level spelling ("Ġ" for space); ids 0..255 are
// the single bytes, merged tokens follow in merge order.
nlohmann::json tiny_tokenizer_json(const std::vector<std::pair<std::string, std::string>>& merges,
                                   const std::vector<TinyAdded>& added = {},
                                   bool array_merges = false);

}  // namespace ringserve::testing
