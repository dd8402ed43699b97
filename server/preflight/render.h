// The report for people (a table, coloured on a terminal) and for programs
// (JSON, schema-versioned: "schema_version" changes only when a field is
// removed or changes meaning; new fields may appear at any time).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "preflight/report.h"

namespace ringserve::preflight {

std::string render_table(const Report& report, bool color);
nlohmann::json render_json(const Report& report);
nlohmann::json port_json(const PortView& port);

}  // namespace ringserve::preflight
