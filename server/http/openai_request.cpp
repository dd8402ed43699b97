#include "http/openai_request.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

namespace ringserve::http {
namespace {

using nlohmann::json;

constexpr int kMaxTopLogprobs = 20;
constexpr size_t kMaxStopStrings = 16;
constexpr size_t kMaxMessages = 4096;

// A field that is absent or null counts as not given.
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

Error type_error(const char* name, const char* expected) {
  return make_error(Errc::kInvalidArgument, "'{}' must be {}", name, expected);
}

Expected<std::optional<double>> get_number(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::optional<double>{};
  if (!v->is_number()) return type_error(name, "a number");
  return std::optional<double>{v->get<double>()};
}

Expected<std::optional<int64_t>> get_integer(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::optional<int64_t>{};
  if (v->is_number_integer()) return std::optional<int64_t>{v->get<int64_t>()};
  // 16.0 is an integer in JSON's eyes and in Python clients' output.
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d)))
      return std::optional<int64_t>{int64_t(d)};
  }
  return type_error(name, "an integer");
}

Expected<std::optional<bool>> get_bool(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::optional<bool>{};
  if (!v->is_boolean()) return type_error(name, "a boolean");
  return std::optional<bool>{v->get<bool>()};
}

Expected<std::string> message_content(const json& message, size_t index) {
  const json* content = field(message, "content");
  if (!content) return std::string();
  if (content->is_string()) return content->get<std::string>();
  // The multi-part form: [{"type": "text", "text": "..."}, ...]; only text.
  if (content->is_array()) {
    std::string text;
    for (const json& part : *content) {
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
          !part["text"].is_string()) {
        return make_error(Errc::kInvalidArgument,
                          "'messages[{}].content' parts must be {{\"type\":\"text\",\"text\":...}}",
                          index);
      }
      text += part["text"].get<std::string>();
    }
    return text;
  }
  return make_error(Errc::kInvalidArgument, "'messages[{}].content' must be a string or a list",
                    index);
}

Expected<std::vector<int32_t>> chat_prompt(const json& body, const ParseContext& context) {
  const json* messages = field(body, "messages");
  if (!messages) return make_error(Errc::kInvalidArgument, "'messages' is required");
  if (!messages->is_array() || messages->empty()) {
    return type_error("messages", "a non-empty list");
  }
  if (messages->size() > kMaxMessages) {
    return make_error(Errc::kInvalidArgument, "'messages' has more than {} entries", kMaxMessages);
  }
  if (!context.tokenizer) {
    return make_error(Errc::kUnsupported,
                      "chat requests need a tokenizer (start with --tokenizer)");
  }
  std::vector<tokenizer::ChatMessage> chat;
  chat.reserve(messages->size());
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return make_error(Errc::kInvalidArgument, "'messages[{}]' needs a string 'role'", i);
    }
    std::string content = RS_TRY(message_content(m, i));
    chat.push_back({m["role"].get<std::string>(), std::move(content)});
  }
  std::string text = RS_TRY(tokenizer::render_chat(chat, /*add_generation_prompt=*/true));
  return context.tokenizer->encode(text, /*parse_special=*/true);
}

Expected<std::vector<int32_t>> completion_prompt(const json& body, const ParseContext& context) {
  const json* prompt = field(body, "prompt");
  if (!prompt) return make_error(Errc::kInvalidArgument, "'prompt' is required");
  auto encode = [&](const std::string& text) -> Expected<std::vector<int32_t>> {
    if (!context.tokenizer) {
      return make_error(Errc::kUnsupported,
                        "text prompts need a tokenizer (start with --tokenizer), "
                        "or send token ids");
    }
    return context.tokenizer->encode(text, /*parse_special=*/true);
  };
  if (prompt->is_string()) return encode(prompt->get<std::string>());
  if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    return encode((*prompt)[0].get<std::string>());
  }
  if (prompt->is_array() && !prompt->empty() &&
      std::all_of(prompt->begin(), prompt->end(),
                  [](const json& v) { return v.is_number_integer(); })) {
    std::vector<int32_t> ids;
    ids.reserve(prompt->size());
    for (const json& v : *prompt) {
      const int64_t id = v.get<int64_t>();
      if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
        return make_error(Errc::kInvalidArgument, "'prompt' token id {} is out of range", id);
      }
      ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
  }
  if (prompt->is_array() && prompt->size() > 1) {
    return make_error(Errc::kUnsupported,
                      "batched prompts are not supported: send one per request");
  }
  return type_error("prompt", "a string, a list of token ids, or a one-element list of strings");
}

Status parse_sampling(const json& body, ApiCall& call) {
  engine::SamplingParams& s = call.request.sampling;
  if (auto t = RS_TRY(get_number(body, "temperature"))) {
    if (*t < 0.0 || *t > 2.0)
      return make_error(Errc::kInvalidArgument, "'temperature' must be in [0, 2]");
    s.temperature = static_cast<float>(*t);
  } else {
    s.temperature = 1.0f;  // OpenAI's default
  }
  if (auto p = RS_TRY(get_number(body, "top_p"))) {
    if (!(*p > 0.0 && *p <= 1.0))
      return make_error(Errc::kInvalidArgument, "'top_p' must be in (0, 1]");
    s.top_p = static_cast<float>(*p);
  }
  if (auto k = RS_TRY(get_integer(body, "top_k"))) {
    if (*k < -1 || *k > 1'000'000)
      return make_error(Errc::kInvalidArgument, "'top_k' must be >= 0 (or -1 for off)");
    s.top_k = *k < 0 ? 0 : static_cast<int>(*k);
  }
  if (auto seed = RS_TRY(get_integer(body, "seed"))) {
    s.seed = static_cast<uint64_t>(*seed);
  } else {
    s.seed = static_cast<uint64_t>(call.request.arrival.time_since_epoch().count()) *
             0x9E3779B97F4A7C15ull;
  }
  return ok();
}

Status parse_stop(const json& body, serve::StopCriteria& stop) {
  const json* v = field(body, "stop");
  if (!v) return ok();
  if (v->is_string()) {
    stop.stop_strings.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > kMaxStopStrings) {
      return make_error(Errc::kInvalidArgument, "'stop' has more than {} entries", kMaxStopStrings);
    }
    for (const json& s : *v) {
      if (!s.is_string()) return type_error("stop", "a string or a list of strings");
      stop.stop_strings.push_back(s.get<std::string>());
    }
  } else {
    return type_error("stop", "a string or a list of strings");
  }
  for (const std::string& s : stop.stop_strings) {
    if (s.empty()) return make_error(Errc::kInvalidArgument, "'stop' strings must not be empty");
  }
  return ok();
}

Status parse_logprobs(Endpoint endpoint, const json& body, ApiCall& call) {
  if (endpoint == Endpoint::kChat) {
    call.logprobs = RS_TRY(get_bool(body, "logprobs")).value_or(false);
    const auto top = RS_TRY(get_integer(body, "top_logprobs"));
    if (top) {
      if (*top < 0 || *top > kMaxTopLogprobs) {
        return make_error(Errc::kInvalidArgument, "'top_logprobs' must be in [0, {}]",
                          kMaxTopLogprobs);
      }
      if (!call.logprobs && *top > 0) {
        return make_error(Errc::kInvalidArgument, "'top_logprobs' needs 'logprobs': true");
      }
      call.top_logprobs = static_cast<int>(*top);
    }
  } else {
    // Legacy completions: "logprobs": N means the N best alternatives.
    const auto n = RS_TRY(get_integer(body, "logprobs"));
    if (n) {
      if (*n < 0 || *n > kMaxTopLogprobs) {
        return make_error(Errc::kInvalidArgument, "'logprobs' must be in [0, {}]", kMaxTopLogprobs);
      }
      call.logprobs = true;
      call.top_logprobs = static_cast<int>(*n);
    }
  }
  call.request.sampling.top_logprobs = call.logprobs ? std::max(call.top_logprobs, 1) : 0;
  return ok();
}

}  // namespace

Expected<ApiCall> parse_api_call(Endpoint endpoint, std::string_view body_text,
                                 const ParseContext& context) {
  json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded())
    return make_error(Errc::kInvalidArgument, "request body is not valid JSON");
  if (!body.is_object())
    return make_error(Errc::kInvalidArgument, "request body must be a JSON object");

  ApiCall call;
  call.endpoint = endpoint;
  call.request.arrival = serve::Clock::now();

  if (const json* model = field(body, "model"); model && !model->is_string()) {
    return type_error("model", "a string");
  }
  if (auto n = RS_TRY(get_integer(body, "n")); n && *n != 1) {
    return make_error(Errc::kUnsupported, "'n' must be 1: send one request per completion");
  }
  if (auto echo = RS_TRY(get_bool(body, "echo")); echo && *echo) {
    return make_error(Errc::kUnsupported, "'echo' is not supported");
  }

  call.request.prompt = endpoint == Endpoint::kChat ? RS_TRY(chat_prompt(body, context))
                                                    : RS_TRY(completion_prompt(body, context));
  if (call.request.prompt.empty()) return make_error(Errc::kInvalidArgument, "the prompt is empty");
  const int prompt_tokens = static_cast<int>(call.request.prompt.size());
  if (static_cast<uint32_t>(prompt_tokens) > context.max_prompt_tokens) {
    return make_error(Errc::kTooLarge, "the prompt has {} tokens; this server accepts at most {}",
                      prompt_tokens, context.max_prompt_tokens);
  }
  const int context_tokens = context.info ? context.info->max_context : 0;
  if (context_tokens > 0 && prompt_tokens >= context_tokens) {
    return make_error(Errc::kTooLarge,
                      "this model's context is {} tokens; the prompt has {}, leaving no room to "
                      "generate",
                      context_tokens, prompt_tokens);
  }

  call.stream = RS_TRY(get_bool(body, "stream")).value_or(false);
  if (const json* opts = field(body, "stream_options")) {
    if (!opts->is_object()) return type_error("stream_options", "an object");
    call.include_usage = RS_TRY(get_bool(*opts, "include_usage")).value_or(false);
  }
  call.request.stream = call.stream;

  RS_TRY_STATUS(parse_sampling(body, call));
  RS_TRY_STATUS(parse_stop(body, call.request.stop));
  RS_TRY_STATUS(parse_logprobs(endpoint, body, call));
  call.request.stop.ignore_eos = RS_TRY(get_bool(body, "ignore_eos")).value_or(false);
  call.return_token_ids = RS_TRY(get_bool(body, "return_token_ids")).value_or(false);

  auto max_tokens = RS_TRY(get_integer(body, "max_completion_tokens"));
  if (!max_tokens) max_tokens = RS_TRY(get_integer(body, "max_tokens"));
  if (max_tokens) {
    if (*max_tokens < 1) return make_error(Errc::kInvalidArgument, "'max_tokens' must be >= 1");
    if (context_tokens > 0 && prompt_tokens + *max_tokens > context_tokens) {
      return make_error(Errc::kTooLarge,
                        "this model's context is {} tokens; the prompt has {} and max_tokens asks "
                        "for {} more",
                        context_tokens, prompt_tokens, *max_tokens);
    }
    call.request.stop.max_new_tokens = static_cast<int>(*max_tokens);
  } else {
    // OpenAI's default for completions is 16; chat runs to the end of the
    // context, capped by --http-default-max-tokens. Either way within the room left.
    const int wanted =
        endpoint == Endpoint::kCompletions ? 16 : static_cast<int>(context.default_max_tokens);
    const int room = context_tokens > 0 ? context_tokens - prompt_tokens : wanted;
    call.request.stop.max_new_tokens = std::max(1, std::min(room, wanted));
  }
  call.split_reasoning = endpoint == Endpoint::kChat;
  return call;
}

}  // namespace ringserve::http
