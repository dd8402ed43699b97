// `ringctl generate`: one request, text streamed to stdout as it arrives.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"

namespace ringctl {
namespace {

struct GenerateArgs {
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  std::string chat;
  SamplingArgs sampling;
  bool json = false;
  bool ids = false;
  bool no_stream = false;
};

nlohmann::json done_json(const ringserve::Done& d) {
  return {{"finish_reason", ringserve::protocol::finish_reason_name(d.reason)},
          {"prompt_tokens", d.prompt_tokens},
          {"completion_tokens", d.completion_tokens},
          {"stop_string", d.stop_string},
          {"error", d.error_message},
          {"timings_us",
           {{"queue", d.timings.queue_us},
            {"prefill", d.timings.prefill_us},
            {"first_token", d.timings.first_token_us},
            {"total", d.timings.total_us},
            {"mean_itl", d.timings.mean_itl_us},
            {"max_itl", d.timings.max_itl_us}}}};
}

int run(const ConnectArgs& connect_args, const GenerateArgs& args) {
  const int forms = !args.prompt.empty() + !args.prompt_ids.empty() + !args.chat.empty();
  if (forms != 1) {
    std::fprintf(stderr, "ringctl generate: give exactly one of --prompt, --prompt-ids, --chat\n");
    return 2;
  }
  auto client = connect(connect_args);
  if (!client) {
    std::fprintf(stderr, "ringctl: %s\n", client.error().to_string().c_str());
    return 1;
  }
  ringserve::GenerateRequest request;
  if (!args.prompt.empty()) {
    request.prompt = ringserve::protocol::PromptText{args.prompt};
  } else if (!args.prompt_ids.empty()) {
    request.prompt = ringserve::protocol::PromptIds{args.prompt_ids};
  } else {
    request.prompt = ringserve::protocol::PromptChat{{{"user", args.chat}}, true};
  }
  request.sampling = to_params(args.sampling);
  request.top_logprobs = static_cast<uint32_t>(args.sampling.top_logprobs);
  request.stream = !args.no_stream;

  auto stream = (*client)->generate(request);
  if (!stream) {
    std::fprintf(stderr, "ringctl: %s\n", stream.error().to_string().c_str());
    return 1;
  }
  // Ctrl-C cancels the request; the stream then ends with Done (cancelled).
  const uint64_t id = stream->id();
  ringserve::Client& c = **client;
  signals::Cancel on_signal([&c, id] { (void)c.cancel(id); });

  const bool stream_out = !args.json;
  std::vector<int32_t> ids;
  std::string text;
  nlohmann::json logprobs = nlohmann::json::array();
  std::optional<ringserve::Done> done;
  while (true) {
    auto event = stream->next();
    if (!event) {
      if (stream_out) std::fputc('\n', stdout);
      std::fprintf(stderr, "ringctl: %s\n", event.error().to_string().c_str());
      return 1;
    }
    if (!*event) break;
    if (const auto* t = std::get_if<ringserve::TokenEvent>(&**event)) {
      ids.insert(ids.end(), t->token_ids.begin(), t->token_ids.end());
      text += t->text;
      for (const auto& lp : t->logprobs) {
        nlohmann::json top = nlohmann::json::array();
        for (const auto& alt : lp.top)
          top.push_back({{"id", alt.token_id}, {"logprob", alt.logprob}});
        logprobs.push_back({{"id", lp.token_id}, {"logprob", lp.logprob}, {"top", top}});
      }
      if (stream_out) {
        if (args.ids) {
          for (int32_t tok : t->token_ids) std::printf("%d ", tok);
        } else {
          std::fwrite(t->text.data(), 1, t->text.size(), stdout);
        }
        std::fflush(stdout);
      }
    } else {
      done = std::get<ringserve::Done>(**event);
    }
  }
  if (!done) return 1;
  if (args.json) {
    nlohmann::json out = done_json(*done);
    out["ids"] = ids;
    out["text"] = text;
    if (args.sampling.top_logprobs > 0) out["logprobs"] = logprobs;
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::fputc('\n', stdout);
    std::fflush(stdout);  // the text before the summary, also when both go to one file
    const double total_s = static_cast<double>(done->timings.total_us) / 1e6;
    std::fprintf(stderr, "[%u tokens, %s, first token %.1f ms, %.1f tokens/s]\n",
                 done->completion_tokens, ringserve::protocol::finish_reason_name(done->reason),
                 static_cast<double>(done->timings.first_token_us) / 1000.0,
                 total_s > 0 ? done->completion_tokens / total_s : 0.0);
  }
  if (done->reason == ringserve::FinishReason::kError) {
    std::fprintf(stderr, "ringctl: %s\n", done->error_message.c_str());
    return 1;
  }
  return done->reason == ringserve::FinishReason::kCancelled ? 130 : 0;
}

}  // namespace

void add_generate_command(CLI::App& app, const ConnectArgs& connect, int& exit_code) {
  auto args = std::make_shared<GenerateArgs>();
  auto* sub = app.add_subcommand("generate", "Generate from one prompt, streaming the text");
  sub->add_option("--prompt,-p", args->prompt, "Prompt text (tokenized by the server)");
  sub->add_option("--prompt-ids", args->prompt_ids, "Prompt as token ids: 1,2,3")->delimiter(',');
  sub->add_option("--chat", args->chat, "One user message, wrapped in the model's chat template");
  add_sampling_flags(*sub, args->sampling);
  sub->add_flag("--json", args->json, "Print one JSON object at the end instead of streaming");
  sub->add_flag("--ids", args->ids, "Stream token ids instead of text");
  sub->add_flag("--no-stream", args->no_stream, "Ask the server for one event at the end");
  sub->callback([args, &connect, &exit_code] { exit_code = run(connect, *args); });
}

}  // namespace ringctl
