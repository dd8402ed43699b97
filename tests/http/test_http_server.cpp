// The HTTP endpoint end to end over real TCP on loopback, against a scripted
// dispatcher: routes, health while loading, errors with OpenAI's JSON and the
// right status codes, SSE streaming, keep-alive, disconnect cancellation,
// slow-loris and oversized requests.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "fake_backend.h"
#include "http/http_server.h"

namespace ringserve::http {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using nlohmann::json;

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;  // de-chunked
};

// A minimal blocking HTTP/1.1 client: enough to check bytes on the wire.
class Client {
 public:
  explicit Client(uint16_t port) : socket_(io_) {
    socket_.connect({net::ip::make_address("127.0.0.1"), port});
  }

  // Errors are ignored: a server may answer and hang up before a request is fully sent.
  void send(const std::string& raw) {
    boost::system::error_code ec;
    net::write(socket_, net::buffer(raw), ec);
  }

  void request(const std::string& method, const std::string& target, const std::string& body = {},
               bool keep_alive = true) {
    send(method + " " + target +
         " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n" +
         (keep_alive ? "" : "Connection: close\r\n") + "\r\n" + body);
  }

  Reply read_reply() {
    Reply r;
    std::string head = read_until("\r\n\r\n");
    std::istringstream in(head);
    std::string version;
    in >> version >> r.status;
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line) && line != "\r" && !line.empty()) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(c));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers[name] = value;
    }
    if (r.headers.count("content-length")) {
      r.body = read_exact(std::stoul(r.headers["content-length"]));
    } else if (r.headers["transfer-encoding"] == "chunked") {
      for (;;) {
        const size_t size = std::stoul(read_until("\r\n"), nullptr, 16);
        std::string data = read_exact(size + 2);
        if (size == 0) break;
        r.body += data.substr(0, size);
      }
    }
    return r;
  }

  // True when the server closed the connection (EOF) within `wait`.
  bool closed_within(std::chrono::milliseconds wait) {
    socket_.non_blocking(true);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      char c;
      boost::system::error_code ec;
      socket_.read_some(net::buffer(&c, 1), ec);
      if (ec == net::error::eof || ec == net::error::connection_reset) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  void close() { socket_.close(); }

 private:
  std::string read_until(const std::string& delim) {
    for (;;) {
      if (auto pos = pending_.find(delim); pos != std::string::npos) {
        std::string out = pending_.substr(0, pos);
        pending_.erase(0, pos + delim.size());
        return out;
      }
      fill();
    }
  }
  std::string read_exact(size_t n) {
    while (pending_.size() < n) fill();
    std::string out = pending_.substr(0, n);
    pending_.erase(0, n);
    return out;
  }
  void fill() {
    char buf[4096];
    const size_t n = socket_.read_some(net::buffer(buf));
    pending_.append(buf, n);
  }

  net::io_context io_;
  tcp::socket socket_;
  std::string pending_;
};

std::vector<json> sse_events(const std::string& body, bool* saw_done) {
  std::vector<json> events;
  size_t pos = 0;
  *saw_done = false;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    const std::string data = body.substr(pos + 6, end - pos - 6);
    if (data == "[DONE]") {
      *saw_done = true;
    } else {
      events.push_back(json::parse(data));
    }
    pos = end;
  }
  return events;
}

// A parsed /metrics page. parse_exposition() fails the test on any line that
// is not Prometheus text format 0.0.4, a sample before its TYPE, or a
// histogram whose buckets are not cumulative or whose +Inf bucket is not _count.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
struct Family {
  std::string type = "untyped";
  bool help = false;
  std::vector<Sample> samples;
};

double parse_value(const std::string& text) {
  if (text == "+Inf" || text == "Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  return std::stod(text);
}

std::map<std::string, Family> parse_exposition(const std::string& text) {
  static const std::string kName = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  static const std::string kLabel = R"re([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")re";
  static const std::regex kHelp("# HELP (" + kName + ") .*");
  static const std::regex kType("# TYPE (" + kName + ") (counter|gauge|histogram|summary|untyped)");
  static const std::regex kSample("(" + kName + ")(?:\\{((?:" + kLabel + ")(?:," + kLabel +
                                  ")*)?\\})? ([+-]?(?:Inf|NaN|[0-9.]+(?:[eE][+-]?[0-9]+)?))");
  static const std::regex kOneLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  std::map<std::string, Family> families;
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kHelp)) {
      EXPECT_FALSE(families[m[1]].help) << "second HELP: " << line;
      families[m[1]].help = true;
    } else if (std::regex_match(line, m, kType)) {
      EXPECT_TRUE(families[m[1]].samples.empty()) << "TYPE after samples: " << line;
      families[m[1]].type = m[2];
    } else if (line.rfind('#', 0) == 0) {
      continue;
    } else {
      EXPECT_TRUE(std::regex_match(line, m, kSample)) << "not a sample: " << line;
      if (m.empty()) continue;
      Sample sample{m[1], {}, parse_value(m[3])};
      const std::string labels = m[2];
      for (std::sregex_iterator it(labels.begin(), labels.end(), kOneLabel), end; it != end; ++it) {
        sample.labels[(*it)[1]] = (*it)[2];
      }
      std::string family = sample.name;
      const std::string base = std::regex_replace(family, std::regex("_(bucket|sum|count)$"), "");
      if (!families.count(family) && families.count(base) && families[base].type == "histogram") {
        family = base;
      }
      EXPECT_TRUE(families.count(family)) << "sample before its TYPE: " << line;
      families[family].samples.push_back(sample);
    }
  }
  for (const auto& [name, f] : families) {
    EXPECT_TRUE(f.help) << name << " has no HELP";
    if (f.type == "counter") {
      for (const Sample& s : f.samples) EXPECT_GE(s.value, 0) << name;
    }
    if (f.type != "histogram") continue;
    std::vector<const Sample*> buckets;
    const Sample* count = nullptr;
    bool sum = false;
    for (const Sample& s : f.samples) {
      if (s.name == name + "_bucket") buckets.push_back(&s);
      if (s.name == name + "_count") count = &s;
      if (s.name == name + "_sum") sum = true;
    }
    EXPECT_TRUE(sum) << name;
    EXPECT_TRUE(count) << name;
    EXPECT_FALSE(buckets.empty()) << name;
    if (!count || buckets.empty()) continue;
    EXPECT_EQ(buckets.back()->labels.at("le"), "+Inf") << name;
    for (size_t i = 1; i < buckets.size(); ++i) {
      EXPECT_GT(parse_value(buckets[i]->labels.at("le")),
                parse_value(buckets[i - 1]->labels.at("le")))
          << name;
      EXPECT_GE(buckets[i]->value, buckets[i - 1]->value) << name << " buckets are not cumulative";
    }
    EXPECT_EQ(buckets.back()->value, count->value) << name;
  }
  return families;
}

double metric_value(const std::map<std::string, Family>& families, const std::string& name,
                    const std::string& family = {}) {
  auto it = families.find(family.empty() ? name : family);
  if (it == families.end()) return NAN;
  for (const Sample& s : it->second.samples)
    if (s.name == name) return s.value;
  return NAN;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override { start({"Hel", "lo", " wor", "ld"}); }
  void TearDown() override { stop(); }

  void start(std::vector<std::string> script, size_t max_running = 8,
             std::chrono::milliseconds delay = std::chrono::milliseconds(2),
             uint32_t max_connections = 16) {
    io_ = std::make_unique<net::io_context>();
    work_.emplace(io_->get_executor());
    dispatcher_ =
        std::make_unique<testing::ScriptedDispatcher>(std::move(script), 1024, max_running, delay);
    HttpOptions options;
    options.listen = "127.0.0.1:0";
    options.read_timeout = std::chrono::milliseconds(400);
    options.body_limit_bytes = 64 * 1024;
    options.max_connections = max_connections;
    options.max_prompt_tokens = 512;
    auto server = HttpServer::create(*io_, options);
    ASSERT_TRUE(server) << server.error().to_string();
    server_ = *server;
    server_->start();
    thread_ = std::thread([this] { io_->run(); });
  }
  void ready() { server_->set_backend(dispatcher_.get(), tokenizer_, "test-model"); }
  void stop() {
    if (!server_) return;
    server_->stop();
    work_.reset();
    dispatcher_.reset();  // cancels leftovers; sessions finish
    io_->stop();
    thread_.join();
    server_.reset();
    io_.reset();
  }

  std::unique_ptr<net::io_context> io_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_ =
      std::make_shared<testing::ByteTokenizer>();
  std::unique_ptr<testing::ScriptedDispatcher> dispatcher_;
  std::shared_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(HttpServerTest, HealthIsLoadingThenReady) {
  Client c(server_->port());
  c.request("GET", "/health");
  Reply r = c.read_reply();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body)["status"], "loading");
  ready();
  c.request("GET", "/health");  // same connection: keep-alive
  r = c.read_reply();
  EXPECT_EQ(r.status, 200);
}

TEST_F(HttpServerTest, ModelsAndMetrics) {
  ready();
  Client c(server_->port());
  c.request("GET", "/v1/models");
  Reply models = c.read_reply();
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(json::parse(models.body)["data"][0]["id"], "test-model");
  c.request("GET", "/metrics");
  Reply metrics = c.read_reply();
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.headers["content-type"].find("text/plain"), std::string::npos);
  EXPECT_NE(metrics.body.find("ringserve_ready 1"), std::string::npos);
  EXPECT_NE(metrics.body.find("ringserve_batch_size_bucket"), std::string::npos);
}

TEST_F(HttpServerTest, MetricsAreValidPrometheusTextWhileLoadingAndAfterTraffic) {
  Client c(server_->port());
  c.request("GET", "/metrics");
  Reply loading = c.read_reply();
  ASSERT_EQ(loading.status, 200);
  auto families = parse_exposition(loading.body);
  EXPECT_EQ(metric_value(families, "ringserve_ready"), 0);

  ready();
  server_->set_load_seconds(1.5);
  server_->set_preflight_verdict("ok");
  for (int i = 0; i < 3; ++i) {
    c.request("POST", "/v1/completions", R"({"prompt":"abc","max_tokens":4})");
    ASSERT_EQ(c.read_reply().status, 200);
  }
  c.request("POST", "/v1/completions", "{bad");
  EXPECT_EQ(c.read_reply().status, 400);
  Client d(server_->port());
  d.request("GET", "/metrics");
  Reply r = d.read_reply();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  families = parse_exposition(r.body);
  EXPECT_EQ(metric_value(families, "ringserve_ready"), 1);
  EXPECT_EQ(metric_value(families, "ringserve_model_load_seconds"), 1.5);
  EXPECT_EQ(families["ringserve_preflight_verdict"].samples.at(0).labels["verdict"], "ok");
  EXPECT_EQ(families["ringserve_model_info"].samples.at(0).labels["model"], "test-model");
  EXPECT_EQ(families["ringserve_http_errors_total"].type, "counter");
  EXPECT_GE(metric_value(families, "ringserve_http_errors_total"), 1);
  EXPECT_GE(metric_value(families, "ringserve_http_requests_total"), 5);
  for (const char* h : {"ringserve_batch_size", "ringserve_time_to_first_token_seconds",
                        "ringserve_inter_token_latency_seconds"}) {
    EXPECT_EQ(families[h].type, "histogram") << h;
  }
  for (const char* g :
       {"ringserve_requests_running", "ringserve_queue_depth", "ringserve_kv_cache_usage_ratio"}) {
    EXPECT_EQ(families[g].type, "gauge") << g;
  }
}

TEST_F(HttpServerTest, ChatCompletionNonStreaming) {
  ready();
  Client c(server_->port());
  c.request("POST", "/v1/chat/completions",
            R"({"model":"x","messages":[{"role":"user","content":"hi"}],"max_tokens":8})");
  Reply r = c.read_reply();
  ASSERT_EQ(r.status, 200) << r.body;
  json body = json::parse(r.body);
  EXPECT_EQ(body["object"], "chat.completion");
  // The script never closes </think>, so it is all reasoning.
  EXPECT_EQ(body["choices"][0]["message"]["reasoning_content"], "Hello world");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"]["completion_tokens"], 4);
}

TEST_F(HttpServerTest, CompletionStreamingIsChunkedSse) {
  ready();
  Client c(server_->port());
  c.request(
      "POST", "/v1/completions",
      R"({"prompt":"abc","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}})");
  Reply r = c.read_reply();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  bool done = false;
  auto events = sse_events(r.body, &done);
  EXPECT_TRUE(done);
  std::string text;
  std::string finish;
  for (const json& e : events) {
    if (e.contains("usage")) {
      EXPECT_EQ(e["usage"]["completion_tokens"], 3);
      continue;
    }
    text += e["choices"][0]["text"].get<std::string>();
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, "Hello wor");
  EXPECT_EQ(finish, "length");
  // Keep-alive: the connection serves another request after the stream.
  c.request("GET", "/health");
  EXPECT_EQ(c.read_reply().status, 200);
}

TEST_F(HttpServerTest, ErrorsUseOpenAiJsonAndStatusCodes) {
  ready();
  struct Case {
    std::string method, target, body;
    int status;
    std::string code;
  } cases[] = {
      {"POST", "/v1/chat/completions", "{not json", 400, "invalid_request"},
      {"POST", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":"x"}],"temperature":"x"})", 400, "invalid_request"},
      {"POST", "/v1/chat/completions", "", 400, "invalid_request"},
      {"POST", "/v1/completions", "[1,2]", 400, "invalid_request"},
      {"POST", "/v1/chat/completions", R"({"messages":"hi"})", 400, "invalid_request"},
      {"POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":5}]})", 400,
       "invalid_request"},
      {"POST", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"5"})", 400, "invalid_request"},
      {"POST", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})", 400, "invalid_request"},
      {"POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"stop":7})",
       400, "invalid_request"},
      {"POST", "/v1/completions", R"({"prompt":{"text":"x"}})", 400, "invalid_request"},
      {"POST", "/v1/completions", R"({"prompt":"x","top_k":1.5})", 400, "invalid_request"},
      {"POST", "/v1/completions", R"({"prompt":"x","stream_options":true})", 400,
       "invalid_request"},
      {"POST", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":"x"}],"max_tokens":5000})", 400,
       "context_length_exceeded"},
      // Beyond max_prompt_tokens (512), and beyond the context (1024).
      {"POST", "/v1/completions", R"({"prompt":")" + std::string(600, 'x') + R"("})", 400,
       "context_length_exceeded"},
      {"POST", "/v1/completions", R"({"prompt":"x","max_tokens":1024})", 400,
       "context_length_exceeded"},
      {"GET", "/v1/chat/completions", "", 405, "method_not_allowed"},
      {"GET", "/nope", "", 404, "not_found"},
  };
  for (const Case& k : cases) {
    Client c(server_->port());
    c.request(k.method, k.target, k.body);
    Reply r = c.read_reply();
    EXPECT_EQ(r.status, k.status) << k.body;
    json body = json::parse(r.body);
    EXPECT_EQ(body["error"]["code"], k.code) << r.body;
    EXPECT_TRUE(body["error"]["message"].is_string());
    EXPECT_TRUE(body["error"]["type"].is_string());
    EXPECT_EQ(r.headers["content-type"], "application/json");
  }
}

TEST_F(HttpServerTest, OversizedBodyIs413AndServerKeepsServing) {
  ready();
  {
    // Announced size above the limit: rejected before the body is read.
    Client c(server_->port());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 102400\r\n\r\n");
    EXPECT_EQ(c.read_reply().status, 413);
  }
  {
    // Chunked body that grows past the limit.
    Client c(server_->port());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string chunk(16 * 1024, 'x');
    for (int i = 0; i < 5; ++i) c.send("4000\r\n" + chunk + "\r\n");
    EXPECT_EQ(c.read_reply().status, 413);
  }
  Client c(server_->port());
  c.request("GET", "/health");
  EXPECT_EQ(c.read_reply().status, 200);
}

TEST_F(HttpServerTest, OversizedHeadersAre431) {
  ready();
  Client c(server_->port());
  c.send("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20 * 1024, 'a') + "\r\n\r\n");
  Reply r = c.read_reply();
  EXPECT_EQ(r.status, 431);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "headers_too_large");
}

TEST_F(HttpServerTest, TooManyConnectionsIs503WithRetryAfter) {
  stop();
  start({"a"}, 8, std::chrono::milliseconds(2), /*max_connections=*/2);
  ready();
  Client a(server_->port()), b(server_->port());
  a.request("GET", "/health");
  EXPECT_EQ(a.read_reply().status, 200);
  b.request("GET", "/health");
  EXPECT_EQ(b.read_reply().status, 200);
  Client c(server_->port());
  Reply r = c.read_reply();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "too_many_connections");
}

TEST_F(HttpServerTest, TokenIdsAndTimingsOnRequest) {
  ready();
  Client c(server_->port());
  c.request("POST", "/v1/completions",
            R"({"prompt":"abc","max_tokens":3,"return_token_ids":true})");
  Reply r = c.read_reply();
  ASSERT_EQ(r.status, 200) << r.body;
  json body = json::parse(r.body);
  EXPECT_EQ(body["choices"][0]["token_ids"], json::array({0, 1, 2}));
  EXPECT_TRUE(body["timings"]["first_token_ms"].is_number());
  c.request("POST", "/v1/completions",
            R"({"prompt":"abc","max_tokens":3,"stream":true,"return_token_ids":true})");
  r = c.read_reply();
  ASSERT_EQ(r.status, 200);
  bool done = false;
  std::vector<int> ids;
  bool timings = false;
  for (const json& e : sse_events(r.body, &done)) {
    if (e.contains("timings")) timings = true;
    if (e["choices"][0].contains("token_ids")) {
      for (int id : e["choices"][0]["token_ids"]) ids.push_back(id);
    }
  }
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(timings);
}

TEST_F(HttpServerTest, OverloadIs429WithRetryAfter) {
  stop();
  start({"a", "b", "c", "d", "e", "f"}, /*max_running=*/1, std::chrono::milliseconds(200));
  ready();
  Client busy(server_->port());
  busy.request("POST", "/v1/completions", R"({"prompt":"x","max_tokens":6,"stream":true})");
  // Wait until the first request runs, then a second one overflows.
  for (int i = 0; i < 200 && dispatcher_->running() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Client c(server_->port());
  c.request("POST", "/v1/completions", R"({"prompt":"y","max_tokens":2})");
  Reply r = c.read_reply();
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "rate_limit_exceeded");
}

TEST_F(HttpServerTest, DisconnectCancelsTheRequest) {
  stop();
  start({"a", "b", "c", "d", "e", "f", "g", "h"}, 8, std::chrono::milliseconds(100));
  ready();
  for (bool stream : {true, false}) {
    const size_t before = dispatcher_->cancelled().size();
    {
      Client c(server_->port());
      c.request("POST", "/v1/completions",
                std::string(R"({"prompt":"x","max_tokens":8,"stream":)") +
                    (stream ? "true" : "false") + "}");
      for (int i = 0; i < 200 && dispatcher_->running() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      c.close();
    }
    for (int i = 0; i < 400 && dispatcher_->cancelled().size() == before; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(dispatcher_->cancelled().size(), before + 1) << "stream=" << stream;
    for (int i = 0; i < 400 && dispatcher_->running() > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Shutdown waits for busy sessions (a request received, its response not
// yet written) and for nothing else: the count must rise with a request and
// fall back to zero once its response is out, also on a kept-alive
// connection and after a disconnect.
TEST_F(HttpServerTest, BusySessionsCountRequestsUntilTheirResponseIsWritten) {
  stop();
  start({"a", "b", "c", "d"}, 8, std::chrono::milliseconds(40));
  ready();
  auto settle = [&](int64_t want) {
    for (int i = 0; i < 400 && server_->busy_sessions() != want; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return server_->busy_sessions();
  };
  EXPECT_EQ(server_->busy_sessions(), 0);
  Client c(server_->port());
  c.request("POST", "/v1/completions", R"({"prompt":"x","max_tokens":4})");
  EXPECT_EQ(settle(1), 1);
  Reply r = c.read_reply();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(settle(0), 0);
  c.request("GET", "/health");  // kept alive: the same session, busy again, then idle
  r = c.read_reply();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(settle(0), 0);
  {
    Client gone(server_->port());
    gone.request("POST", "/v1/completions", R"({"prompt":"x","max_tokens":4})");
    EXPECT_EQ(settle(1), 1);
    gone.close();
  }
  EXPECT_EQ(settle(0), 0);
}

TEST_F(HttpServerTest, SlowLorisIsDisconnected) {
  ready();
  Client c(server_->port());
  c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n");  // never finishes its headers
  EXPECT_TRUE(c.closed_within(std::chrono::milliseconds(3000)));
  Client d(server_->port());
  d.request("GET", "/health");
  EXPECT_EQ(d.read_reply().status, 200);
}

TEST_F(HttpServerTest, GarbageRequestLineIs400) {
  ready();
  Client c(server_->port());
  c.send("\x01\x02 garbage\r\n\r\n");
  Reply r = c.read_reply();
  EXPECT_EQ(r.status, 400);
}

}  // namespace
}  // namespace ringserve::http
