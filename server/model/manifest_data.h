// The manifest texts compiled into the binary (generated manifests.cpp).
#pragma once

#include <vector>

namespace ringserve::model {

struct ManifestText {
  const char* name;                    // the models/<name>/ folder
  const char* config_json;             // models/<name>/config.json
  const char* generation_config_json;  // models/<name>/generation_config.json or ""
};

const std::vector<ManifestText>& manifest_texts();

}  // namespace ringserve::model
