// `ringbench compare A.json B.json`: two runs side by side, with B/A ratios.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "ringserve/common/expected.h"

namespace ringbench {

// Reads and checks a ringbench JSON report (schema "ringbench/1").
ringserve::Expected<nlohmann::json> load_report(const std::filesystem::path& path);

std::string format_comparison(const nlohmann::json& a, const nlohmann::json& b,
                              const std::string& name_a, const std::string& name_b);

}  // namespace ringbench
