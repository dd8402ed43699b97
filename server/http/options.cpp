#include "http/options.h"

#include <charconv>

namespace ringserve::http {

Expected<ListenAddress> parse_listen_address(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return make_error(Errc::kInvalidArgument, "--http '{}': expected HOST:PORT", text);
  }
  ListenAddress out;
  out.host = text.substr(0, colon);
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  if (out.host.empty() || out.host == "localhost") out.host = "127.0.0.1";
  const std::string port = text.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return make_error(Errc::kInvalidArgument, "--http '{}': bad port '{}'", text, port);
  }
  out.port = static_cast<uint16_t>(value);
  out.loopback = out.host == "::1" || out.host.rfind("127.", 0) == 0;
  return out;
}

void add_cli_flags(CLI::App& app, HttpOptions& options) {
  app.add_option("--http", options.listen,
                 "Serve the OpenAI-compatible HTTP API on HOST:PORT (off unless given; "
                 "use a loopback address: there is no authentication)");
  app.add_option("--http-max-connections", options.max_connections,
                 "Most concurrent HTTP connections")
      ->capture_default_str();
  app.add_option("--http-max-body-bytes", options.body_limit_bytes,
                 "Largest HTTP request body accepted")
      ->capture_default_str();
  app.add_option_function<int64_t>(
         "--http-read-timeout-ms",
         [&options](int64_t ms) { options.read_timeout = std::chrono::milliseconds(ms); },
         "Time allowed to send a request's headers and body, and keep-alive idle time (ms)")
      ->default_str(std::to_string(options.read_timeout.count()));
  app.add_option("--http-default-max-tokens", options.default_max_tokens,
                 "max_tokens for chat requests that give none (capped by the context)")
      ->capture_default_str();
}

}  // namespace ringserve::http
