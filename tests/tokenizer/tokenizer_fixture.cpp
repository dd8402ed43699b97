#include "tokenizer_fixture.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace ringserve::testing {

std::shared_ptr<const tokenizer::Tokenizer> fixture_tokenizer() {
  static const std::shared_ptr<const tokenizer::Tokenizer> tok = [] {
    auto loaded = tokenizer::Tokenizer::load(
        fixture_path("tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz"));
    if (!loaded) {
      ADD_FAILURE() << loaded.error().to_string();
      return std::shared_ptr<const tokenizer::Tokenizer>();
    }
    return *loaded;
  }();
  return tok;
}

}  // namespace ringserve::testing
