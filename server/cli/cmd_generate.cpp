// `ringserve generate`: one prompt through an engine in this process, no
// server. The reference way to see what the model says, and the CPU
// benchmark (timings in --json).
//
//   ringserve generate --model DIR|synthetic:NAME
//       (--prompt TEXT | --prompt-ids 1,2,3 | --chat TEXT)
//       [--max-new-tokens N] [--temperature T --top-p P --top-k K --seed S]
//       [--top-logprobs N] [--backend cpu|cuda|auto] [--threads N]
//       [--tokenizer FILE] [--stop STR]... [--ignore-eos] [--json]
//
// Without --json the text streams to stdout as it is generated (or the ids,
// when there is no tokenizer); with --json exactly one JSON object is
// printed at the end. Logs go to stderr.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "engine/factory.h"
#include "model/loader.h"
#include "ringserve/common/expected.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ringserve::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct GenerateOptions {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  std::string chat;
  std::string tokenizer;
  std::string backend = "auto";
  std::vector<std::string> stop;
  int max_new_tokens = 64;
  float temperature = 0.0f;
  float top_p = 1.0f;
  int top_k = 0;
  uint64_t seed = 0;
  int top_logprobs = 0;
  int threads = 0;
  bool ignore_eos = false;
  bool json = false;
};

Expected<std::vector<int32_t>> parse_ids(std::string_view s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ',' || s[i] == ' ') {
      ++i;
      continue;
    }
    int32_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
    if (ec != std::errc() || (ptr != s.data() + s.size() && *ptr != ',' && *ptr != ' ')) {
      return make_error(Errc::kInvalidArgument, "--prompt-ids: not a token id at offset {}", i);
    }
    ids.push_back(v);
    i = static_cast<size_t>(ptr - s.data());
  }
  if (ids.empty()) return make_error(Errc::kInvalidArgument, "--prompt-ids: no ids");
  return ids;
}

// --tokenizer, else tokenizer.json(.gz) next to the model's weights.
Expected<std::shared_ptr<const tokenizer::Tokenizer>> find_tokenizer(const GenerateOptions& o) {
  if (!o.tokenizer.empty()) return tokenizer::Tokenizer::load(o.tokenizer);
  if (!o.model.starts_with("synthetic:")) {
    for (const char* name : {"tokenizer.json", "tokenizer.json.gz"}) {
      const fs::path path = fs::path(o.model) / name;
      if (fs::exists(path)) return tokenizer::Tokenizer::load(path);
    }
  }
  return std::shared_ptr<const tokenizer::Tokenizer>();
}

Expected<std::vector<int32_t>> make_prompt(const GenerateOptions& o,
                                           const tokenizer::Tokenizer* tok) {
  if (!o.prompt_ids.empty()) return parse_ids(o.prompt_ids);
  if (tok == nullptr) {
    return make_error(Errc::kInvalidArgument,
                      "a text prompt needs a tokenizer: none in {}; pass --tokenizer FILE or use "
                      "--prompt-ids",
                      o.model);
  }
  if (!o.chat.empty()) {
    const std::string text = RS_TRY(tokenizer::render_chat({{"user", o.chat}}));
    return tok->encode(text, /*parse_special=*/true);
  }
  return tok->encode(o.prompt, /*parse_special=*/true);
}

struct Generation {
  std::vector<int32_t> ids;
  std::vector<std::vector<engine::TokenLogprob>> top;
  std::vector<float> logprobs;
  std::string text;
  std::string finish_reason = "length";
  std::string stop_string;
  double prefill_ms = 0.0;
  double decode_ms = 0.0;
};

Expected<int> run(const GenerateOptions& o) {
  const engine::Backend backend = RS_TRY(engine::parse_backend(o.backend));
  if (o.max_new_tokens <= 0) {
    return make_error(Errc::kInvalidArgument, "--max-new-tokens must be positive");
  }
  auto tok = RS_TRY(find_tokenizer(o));
  std::vector<int32_t> prompt = RS_TRY(make_prompt(o, tok.get()));

  const auto load_start = Clock::now();
  model::LoadOptions load;
  load.threads = o.threads;
  model::ModelWeights weights = RS_TRY(model::load_model(o.model, load));
  const double load_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - load_start).count();
  const std::vector<int32_t> eos = weights.config.eos_token_ids;

  engine::EngineOptions options;
  options.backend = backend;
  options.max_batch = 1;
  options.threads = o.threads;
  const int64_t context = static_cast<int64_t>(prompt.size()) + o.max_new_tokens;
  const int model_max = weights.config.max_position_embeddings;
  if (model_max > 0 && context > model_max) {
    return make_error(Errc::kTooLarge, "{} prompt + {} new tokens exceed the model's context of {}",
                      prompt.size(), o.max_new_tokens, model_max);
  }
  options.max_context = static_cast<int>(context);
  auto engine = RS_TRY(engine::create_engine(options, std::move(weights)));

  engine::SequenceSpec spec;
  spec.id = 1;
  spec.prompt = prompt;
  spec.max_new_tokens = o.max_new_tokens;
  spec.sampling = {o.temperature, o.top_p, o.top_k, o.seed, o.top_logprobs};
  RS_TRY_STATUS(engine->add(spec));

  Generation g;
  std::unique_ptr<tokenizer::StreamDecoder> stream;
  if (tok) stream = std::make_unique<tokenizer::StreamDecoder>(tok);
  size_t printed = 0;  // bytes of g.text already on stdout
  // Text that could still turn into a stop string is held back.
  size_t longest_stop = 0;
  for (const auto& s : o.stop) longest_stop = std::max(longest_stop, s.size());

  while (static_cast<int>(g.ids.size()) < o.max_new_tokens) {
    const auto step_start = Clock::now();
    engine::StepResult r = RS_TRY(engine->step());
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - step_start).count();
    const engine::SampledToken& t = r.tokens.at(0);
    (t.from_prefill ? g.prefill_ms : g.decode_ms) += ms;
    if (!o.ignore_eos && std::find(eos.begin(), eos.end(), t.token) != eos.end()) {
      g.finish_reason = "stop";
      break;
    }
    g.ids.push_back(t.token);
    g.logprobs.push_back(t.logprob);
    if (o.top_logprobs > 0) g.top.push_back(t.top);
    if (stream) g.text += stream->push(t.token);
    bool stopped = false;
    for (const auto& s : o.stop) {
      if (s.empty()) continue;
      const auto at = g.text.find(s);
      if (at != std::string::npos) {
        g.text.resize(at);
        g.finish_reason = "stop";
        g.stop_string = s;
        stopped = true;
        break;
      }
    }
    if (!o.json) {
      const size_t safe =
          stopped ? g.text.size() : g.text.size() - std::min(g.text.size(), longest_stop);
      if (!stream) {
        std::printf("%s%d", g.ids.size() == 1 ? "" : ",", t.token);
      } else if (safe > printed) {
        std::fwrite(g.text.data() + printed, 1, safe - printed, stdout);
        printed = safe;
      }
      std::fflush(stdout);
    }
    if (stopped) break;
  }
  if (stream && g.finish_reason != "stop") g.text += stream->flush();
  engine->release(spec.id);

  const int decoded = std::max<int>(0, static_cast<int>(g.ids.size()) - 1);
  const double decode_tps = g.decode_ms > 0 ? decoded / (g.decode_ms / 1e3) : 0.0;
  if (o.json) {
    nlohmann::json out;
    out["model"] = engine->info().model_name;
    out["backend"] = engine->info().backend;
    out["prompt_ids"] = prompt;
    out["ids"] = g.ids;
    out["text"] = g.text;
    out["finish_reason"] = g.finish_reason;
    if (!g.stop_string.empty()) out["stop_string"] = g.stop_string;
    out["logprobs"] = g.logprobs;
    if (o.top_logprobs > 0) {
      auto& steps = out["top_logprobs"] = nlohmann::json::array();
      for (const auto& step : g.top) {
        auto list = nlohmann::json::array();
        for (const auto& e : step) list.push_back({{"id", e.token}, {"logprob", e.logprob}});
        steps.push_back(std::move(list));
      }
    }
    out["timings"] = {
        {"load_ms", load_ms},
        {"prefill_ms", g.prefill_ms},
        {"prefill_tokens", prompt.size()},
        {"prefill_tokens_per_s", g.prefill_ms > 0 ? prompt.size() / (g.prefill_ms / 1e3) : 0.0},
        {"decode_ms", g.decode_ms},
        {"decode_tokens", decoded},
        {"decode_tokens_per_s", decode_tps}};
    // error_handler::replace: token bytes that are not UTF-8 must not abort.
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    if (stream && g.text.size() > printed) {
      std::fwrite(g.text.data() + printed, 1, g.text.size() - printed, stdout);
    }
    std::printf("\n");
    std::fflush(stdout);
    std::fprintf(stderr,
                 "ringserve generate: %zu prompt tokens in %.1f ms, %zu generated (%s), decode "
                 "%.2f tokens/s\n",
                 prompt.size(), g.prefill_ms, g.ids.size(), g.finish_reason.c_str(), decode_tps);
  }
  return 0;
}

}  // namespace

void add_generate_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  auto* sub = app.add_subcommand("generate", "Generate from one prompt in-process (no server)");
  sub->add_option("--model", o->model, "Model directory or synthetic:NAME")->required();
  auto* text = sub->add_option("--prompt", o->prompt, "Prompt text (needs a tokenizer)");
  auto* ids = sub->add_option("--prompt-ids", o->prompt_ids, "Prompt token ids, e.g. 1,2,3");
  auto* chat =
      sub->add_option("--chat", o->chat, "A user message, rendered with the chat template");
  text->excludes(ids)->excludes(chat);
  ids->excludes(chat);
  sub->add_option("--max-new-tokens", o->max_new_tokens, "Most tokens to generate")
      ->capture_default_str();
  sub->add_option("--temperature", o->temperature, "Sampling temperature; <= 0 is greedy")
      ->capture_default_str();
  sub->add_option("--top-p", o->top_p, "Nucleus mass (1 disables)")->capture_default_str();
  sub->add_option("--top-k", o->top_k, "Keep the k most likely tokens (0 disables)")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Sampling seed")->capture_default_str();
  sub->add_option("--top-logprobs", o->top_logprobs, "Report the n best alternatives per token")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  sub->add_option("--backend", o->backend, "cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  sub->add_option("--threads", o->threads, "CPU threads (0: all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--tokenizer", o->tokenizer,
                  "tokenizer.json(.gz); default: the one in the model directory");
  sub->add_option("--stop", o->stop, "Stop when the text contains this string (repeatable)");
  sub->add_flag("--ignore-eos", o->ignore_eos, "Do not stop at the model's end-of-sequence ids");
  sub->add_flag("--json", o->json, "Print one JSON object with ids, text and timings");
  sub->callback([o, &exit_code] {
    if (o->prompt.empty() && o->prompt_ids.empty() && o->chat.empty()) {
      std::fprintf(stderr,
                   "ringserve generate: one of --prompt, --prompt-ids or --chat is needed\n");
      exit_code = 2;
      return;
    }
    auto result = run(*o);
    if (!result) {
      std::fprintf(stderr, "ringserve generate: %s\n", result.error().to_string().c_str());
      exit_code = 1;
      return;
    }
    exit_code = *result;
  });
}

}  // namespace ringserve::cli
