// The DeepSeek-R1-Distill (Qwen2) tokenizer from the fixtures, loaded once
// per test binary: loading parses a 7 MB JSON, which tests need not repeat.
#pragma once

#include <memory>

#include "tokenizer/tokenizer.h"

namespace ringserve::testing {

std::shared_ptr<const tokenizer::Tokenizer> fixture_tokenizer();

}  // namespace ringserve::testing
