#include "http/openai_response.h"

#include <fmt/format.h>

namespace ringserve::http {
namespace {

using nlohmann::json;

std::string dump(const json& j) {
  // Token strings can be partial UTF-8 (a byte-level token); replace, don't throw.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json usage_json(const serve::Completion& done) {
  return {{"prompt_tokens", done.prompt_tokens},
          {"completion_tokens", done.completion_tokens},
          {"total_tokens", done.prompt_tokens + done.completion_tokens}};
}

double ms(std::chrono::microseconds us) {
  return static_cast<double>(us.count()) / 1000.0;
}

json timings_json(const serve::Completion& done) {
  return {{"queue_ms", ms(done.timings.queue)},
          {"prefill_ms", ms(done.timings.prefill)},
          {"first_token_ms", ms(done.timings.first_token)},
          {"total_ms", ms(done.timings.total)}};
}

json bytes_of(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

}  // namespace

ResponseBuilder::ResponseBuilder(const ApiCall& call, std::string model, uint64_t request_id,
                                 int64_t created, const tokenizer::Tokenizer* tokenizer)
    : call_(call),
      model_(std::move(model)),
      id_(fmt::format("{}-{:x}", call.endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl",
                      request_id)),
      created_(created),
      tokenizer_(tokenizer),
      reasoning_(/*starts_in_reasoning=*/call.split_reasoning) {
  logprobs_acc_ = call.endpoint == Endpoint::kChat ? json{{"content", json::array()}}
                                                   : json{{"tokens", json::array()},
                                                          {"token_logprobs", json::array()},
                                                          {"top_logprobs", json::array()},
                                                          {"text_offset", json::array()}};
}

std::string ResponseBuilder::sse(const json& event) {
  return "data: " + dump(event) + "\n\n";
}

json ResponseBuilder::chunk_skeleton() const {
  const bool chat = call_.endpoint == Endpoint::kChat;
  return {{"id", id_},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", model_}};
}

json ResponseBuilder::logprobs_json(const serve::TokenDelta& delta) const {
  json acc = call_.endpoint == Endpoint::kChat ? json{{"content", json::array()}}
                                               : json{{"tokens", json::array()},
                                                      {"token_logprobs", json::array()},
                                                      {"top_logprobs", json::array()},
                                                      {"text_offset", json::array()}};
  size_t offset = text_offset_;
  auto token_text = [&](int32_t id) {
    if (!tokenizer_) return fmt::format("<{}>", id);
    const int32_t one[1] = {id};
    return tokenizer_->decode(one);
  };
  for (const serve::TokenLogprobs& lp : delta.logprobs) {
    const std::string text = token_text(lp.token);
    if (call_.endpoint == Endpoint::kChat) {
      json top = json::array();
      for (int i = 0; i < call_.top_logprobs && i < static_cast<int>(lp.top.size()); ++i) {
        const std::string alt = token_text(lp.top[i].token);
        top.push_back({{"token", alt}, {"logprob", lp.top[i].logprob}, {"bytes", bytes_of(alt)}});
      }
      acc["content"].push_back({{"token", text},
                                {"logprob", lp.logprob},
                                {"bytes", bytes_of(text)},
                                {"top_logprobs", top}});
    } else {
      json top = json::object();
      for (int i = 0; i < call_.top_logprobs && i < static_cast<int>(lp.top.size()); ++i) {
        top[token_text(lp.top[i].token)] = lp.top[i].logprob;
      }
      acc["tokens"].push_back(text);
      acc["token_logprobs"].push_back(lp.logprob);
      acc["top_logprobs"].push_back(top);
      acc["text_offset"].push_back(offset);
      offset += text.size();
    }
  }
  return acc;
}

void ResponseBuilder::append_logprobs(json& acc, const serve::TokenDelta& delta) const {
  json part = logprobs_json(delta);
  for (auto& [key, values] : part.items()) {
    for (auto& v : values) acc[key].push_back(std::move(v));
  }
}

std::string ResponseBuilder::stream_start() {
  if (call_.endpoint != Endpoint::kChat) return {};
  json chunk = chunk_skeleton();
  chunk["choices"] = json::array({{{"index", 0},
                                   {"delta", {{"role", "assistant"}, {"content", ""}}},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullptr}}});
  return sse(chunk);
}

std::string ResponseBuilder::stream_delta(const serve::TokenDelta& delta) {
  json logprobs = call_.logprobs && !delta.logprobs.empty() ? logprobs_json(delta) : json(nullptr);
  const bool ids = call_.return_token_ids && !delta.tokens.empty();
  std::string out;
  if (call_.endpoint == Endpoint::kChat) {
    ReasoningStream::Delta split = call_.split_reasoning ? reasoning_.push(delta.text)
                                                         : ReasoningStream::Delta{{}, delta.text};
    if (split.reasoning.empty() && split.content.empty() && logprobs.is_null() && !ids) return out;
    json d = json::object();
    if (!split.reasoning.empty()) d["reasoning_content"] = split.reasoning;
    if (!split.content.empty() || split.reasoning.empty()) d["content"] = split.content;
    json choice = {{"index", 0}, {"delta", d}, {"logprobs", logprobs}, {"finish_reason", nullptr}};
    if (ids) choice["token_ids"] = delta.tokens;
    json chunk = chunk_skeleton();
    chunk["choices"] = json::array({std::move(choice)});
    out = sse(chunk);
  } else {
    if (delta.text.empty() && logprobs.is_null() && !ids) return out;
    json choice = {
        {"index", 0}, {"text", delta.text}, {"logprobs", logprobs}, {"finish_reason", nullptr}};
    if (ids) choice["token_ids"] = delta.tokens;
    json chunk = chunk_skeleton();
    chunk["choices"] = json::array({std::move(choice)});
    out = sse(chunk);
  }
  text_offset_ += delta.text.size();
  return out;
}

std::string ResponseBuilder::stream_end(const serve::Completion& done) {
  std::string out;
  json chunk = chunk_skeleton();
  if (call_.endpoint == Endpoint::kChat) {
    ReasoningStream::Delta rest = reasoning_.flush();
    json d = json::object();
    if (!rest.reasoning.empty()) d["reasoning_content"] = rest.reasoning;
    if (!rest.content.empty()) d["content"] = rest.content;
    chunk["choices"] = json::array({{{"index", 0},
                                     {"delta", d},
                                     {"logprobs", nullptr},
                                     {"finish_reason", serve::finish_reason_name(done.reason)}}});
  } else {
    chunk["choices"] = json::array({{{"index", 0},
                                     {"text", ""},
                                     {"logprobs", nullptr},
                                     {"finish_reason", serve::finish_reason_name(done.reason)}}});
  }
  chunk["timings"] = timings_json(done);
  out += sse(chunk);
  if (call_.include_usage) {
    json usage = chunk_skeleton();
    usage["choices"] = json::array();
    usage["usage"] = usage_json(done);
    out += sse(usage);
  }
  out += "data: [DONE]\n\n";
  return out;
}

std::string ResponseBuilder::stream_error(const Error& error) {
  json event = {
      {"error",
       {{"message", error.message}, {"type", "server_error"}, {"code", errc_name(error.code)}}}};
  return sse(event) + "data: [DONE]\n\n";
}

void ResponseBuilder::collect(const serve::TokenDelta& delta) {
  if (call_.logprobs && !delta.logprobs.empty()) append_logprobs(logprobs_acc_, delta);
  if (call_.return_token_ids)
    token_ids_.insert(token_ids_.end(), delta.tokens.begin(), delta.tokens.end());
  text_offset_ += delta.text.size();
  if (call_.endpoint == Endpoint::kChat && call_.split_reasoning) {
    ReasoningStream::Delta split = reasoning_.push(delta.text);
    reasoning_text_ += split.reasoning;
    text_ += split.content;
  } else {
    text_ += delta.text;
  }
}

std::string ResponseBuilder::body(const serve::Completion& done) {
  if (call_.endpoint == Endpoint::kChat && call_.split_reasoning) {
    ReasoningStream::Delta rest = reasoning_.flush();
    reasoning_text_ += rest.reasoning;
    text_ += rest.content;
  }
  json logprobs = call_.logprobs ? logprobs_acc_ : json(nullptr);
  json response = {{"id", id_}, {"created", created_}, {"model", model_}};
  if (call_.endpoint == Endpoint::kChat) {
    json message = {{"role", "assistant"}, {"content", text_}};
    if (call_.split_reasoning) {
      message["reasoning_content"] =
          reasoning_text_.empty() ? json(nullptr) : json(reasoning_text_);
    }
    response["object"] = "chat.completion";
    response["choices"] =
        json::array({{{"index", 0},
                      {"message", message},
                      {"logprobs", logprobs},
                      {"finish_reason", serve::finish_reason_name(done.reason)}}});
  } else {
    response["object"] = "text_completion";
    response["choices"] =
        json::array({{{"index", 0},
                      {"text", text_},
                      {"logprobs", logprobs},
                      {"finish_reason", serve::finish_reason_name(done.reason)}}});
  }
  if (call_.return_token_ids) response["choices"][0]["token_ids"] = token_ids_;
  response["usage"] = usage_json(done);
  response["timings"] = timings_json(done);
  return dump(response);
}

}  // namespace ringserve::http
