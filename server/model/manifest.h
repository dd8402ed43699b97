// Built-in model manifests: the shape facts of the models ringserve knows by
// name, compiled in from models/<name>/config.json so `synthetic:<name>`
// works without any file at run time.
//
//   "deepseek-r1-distill-qwen-7b"  the served model (28 layers, hidden 3584)
//   "demo"                         the small quick-start shape (hidden 256,
//                                  4 layers, 4/2 heads, vocab 151936) that
//                                  fits the real Qwen2 tokenizer
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "ringserve/common/expected.h"

namespace ringserve::model {

std::vector<std::string> manifest_names();

// kNotFound listing the known names.
Expected<ModelConfig> builtin_manifest(std::string_view name);

}  // namespace ringserve::model
