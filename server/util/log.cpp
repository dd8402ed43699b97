#include "util/log.h"

#include <mutex>

#include <spdlog/pattern_formatter.h>
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

// %v pasted into a JSON string breaks the line as soon as a message holds a
// quote, a backslash or a newline (a prompt, a path, a client's bad input):
// this flag writes the message as JSON string content instead.
class JsonMessage final : public spdlog::custom_flag_formatter {
  static void put(spdlog::memory_buf_t& dest, std::string_view s) {
    dest.append(s.data(), s.data() + s.size());
  }

 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr char kHex[] = "0123456789abcdef";
    for (const char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      const auto u = static_cast<unsigned char>(c);
      switch (c) {
        case '"':
          put(dest, "\\\"");
          break;
        case '\\':
          put(dest, "\\\\");
          break;
        case '\n':
          put(dest, "\\n");
          break;
        case '\r':
          put(dest, "\\r");
          break;
        case '\t':
          put(dest, "\\t");
          break;
        default:
          if (u < 0x20) {
            const char esc[] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 15]};
            dest.append(esc, esc + sizeof(esc));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessage>();
  }
};

void apply(spdlog::logger& logger) {
  logger.set_level(spdlog::level::from_str(g_options.level));
  if (g_options.json) {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessage>('*').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","pid":%P,"tid":%t,"msg":"%*"})");
    logger.set_formatter(std::move(formatter));
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
