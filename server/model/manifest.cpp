#include "model/manifest.h"

#include <fmt/format.h>

#include "model/manifest_data.h"

namespace ringserve::model {

std::vector<std::string> manifest_names() {
  std::vector<std::string> names;
  for (const auto& m : manifest_texts()) names.emplace_back(m.name);
  return names;
}

Expected<ModelConfig> builtin_manifest(std::string_view name) {
  for (const auto& m : manifest_texts()) {
    if (name != m.name) continue;
    std::string source = fmt::format("models/{}/config.json", m.name);
    ModelConfig c = RS_TRY(parse_config_json(m.config_json, source));
    if (*m.generation_config_json != '\0')
      RS_TRY_STATUS(apply_generation_config(
          m.generation_config_json, fmt::format("models/{}/generation_config.json", m.name), c));
    c.name = m.name;
    return c;
  }
  return make_error(Errc::kNotFound, "no built-in model manifest \"{}\" (known: {})", name,
                    fmt::join(manifest_names(), ", "));
}

}  // namespace ringserve::model
