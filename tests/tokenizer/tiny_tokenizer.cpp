#include "tiny_tokenizer.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_spec.h"

namespace ringserve::testing {

nlohmann::json tiny_tokenizer_json(const std::vector<std::pair<std::string, std::string>>& merges,
                                   const std::vector<TinyAdded>& added, bool array_merges) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    vocab[tokenizer::byte_level::to_spelling(std::string_view(&c, 1))] = b;
  }
  int next = 256;
  nlohmann::json merge_list = nlohmann::json::array();
  for (const auto& [l, r] : merges) {
    if (!vocab.contains(l + r)) vocab[l + r] = next++;
    if (array_merges)
      merge_list.push_back({l, r});
    else
      merge_list.push_back(l + " " + r);
  }
  nlohmann::json added_list = nlohmann::json::array();
  for (const auto& a : added) {
    added_list.push_back({{"id", a.id},
                          {"content", a.content},
                          {"special", a.special},
                          {"lstrip", a.lstrip},
                          {"rstrip", a.rstrip},
                          {"single_word", a.single_word},
                          {"normalized", false}});
  }
  return {
      {"version", "1.0"},
      {"added_tokens", added_list},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", std::string(tokenizer::kGpt2SplitPattern)}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"vocab", vocab},
        {"merges", merge_list}}},
  };
}

}  // namespace ringserve::testing
