#include "util/log.h"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace ringserve::log {
namespace {

std::mutex g_mutex;
Options g_options;
spdlog::sink_ptr g_sink;

spdlog::sink_ptr sink_locked() {
  if (!g_sink) g_sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  return g_sink;
}

void apply(spdlog::logger& logger) {
  logger.set_level(spdlog::level::from_str(g_options.level));
  if (g_options.json) {
    logger.set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","pid":%P,"tid":%t,"msg":"%v"})",
        spdlog::pattern_time_type::utc);
  } else {
    logger.set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%n] %v");
  }
}

}  // namespace

void configure(const Options& options) {
  std::lock_guard lock(g_mutex);
  g_options = options;
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& logger) { apply(*logger); });
}

std::shared_ptr<spdlog::logger> get(std::string_view name) {
  std::lock_guard lock(g_mutex);
  std::string key(name);
  if (auto existing = spdlog::get(key)) return existing;
  auto logger = std::make_shared<spdlog::logger>(key, sink_locked());
  apply(*logger);
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace ringserve::log
