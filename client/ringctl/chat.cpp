// `ringctl chat`: an interactive multi-turn chat in the model's template.
// Reasoning (between <think> and </think>) is shown dimmed on a terminal, or
// hidden with --hide-reasoning. Lines starting with "/" are commands:
// /reset forgets the conversation, /exit (or end of input) leaves.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "reasoning_view.h"

namespace ringctl {
namespace {

struct ChatArgs {
  std::string system;
  SamplingArgs sampling;
  bool hide_reasoning = false;
};

void print_pieces(const std::vector<ReasoningView::Piece>& pieces, bool hide, bool tty) {
  for (const auto& p : pieces) {
    if (p.reasoning && hide) continue;
    if (p.reasoning && tty) std::fputs("\033[2m", stdout);
    std::fwrite(p.text.data(), 1, p.text.size(), stdout);
    if (p.reasoning && tty) std::fputs("\033[0m", stdout);
  }
  std::fflush(stdout);
}

int run(const ConnectArgs& connect_args, const ChatArgs& args) {
  auto client = connect(connect_args);
  if (!client) {
    std::fprintf(stderr, "ringctl: %s\n", client.error().to_string().c_str());
    return 1;
  }
  const bool tty = isatty(STDOUT_FILENO) == 1;
  const bool interactive = isatty(STDIN_FILENO) == 1;
  if (interactive) {
    std::fprintf(stderr, "chatting with %s (/reset, /exit)\n",
                 (*client)->server_info().model_name.c_str());
  }
  std::vector<ringserve::protocol::ChatMessage> messages;
  if (!args.system.empty()) messages.push_back({"system", args.system});
  std::string line;
  while (true) {
    if (interactive) std::fputs("\n> ", stderr);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      messages.resize(args.system.empty() ? 0 : 1);
      continue;
    }
    messages.push_back({"user", line});
    ringserve::GenerateRequest request;
    request.prompt = ringserve::protocol::PromptChat{messages, true};
    request.sampling = to_params(args.sampling);
    auto stream = (*client)->generate(request);
    if (!stream) {
      std::fprintf(stderr, "ringctl: %s\n", stream.error().to_string().c_str());
      messages.pop_back();
      continue;
    }
    const uint64_t id = stream->id();
    ringserve::Client& c = **client;
    signals::Cancel on_signal([&c, id] { (void)c.cancel(id); });
    ReasoningView view(true);
    std::string reply;
    bool failed = false;
    while (true) {
      auto event = stream->next();
      if (!event) {
        std::fprintf(stderr, "\nringctl: %s\n", event.error().to_string().c_str());
        if (!(*client)->connected()) return 1;
        failed = true;
        break;
      }
      if (!*event) break;
      if (const auto* t = std::get_if<ringserve::TokenEvent>(&**event)) {
        reply += t->text;
        print_pieces(view.push(t->text), args.hide_reasoning, tty);
      } else if (const auto* d = std::get_if<ringserve::Done>(&**event)) {
        if (d->reason == ringserve::FinishReason::kError) {
          std::fprintf(stderr, "\nringctl: %s\n", d->error_message.c_str());
          failed = true;
        }
      }
    }
    print_pieces(view.flush(), args.hide_reasoning, tty);
    std::fputc('\n', stdout);
    if (failed) {
      messages.pop_back();
      continue;
    }
    // The template keeps only the answer of earlier turns (after </think>).
    messages.push_back({"assistant", reply});
  }
  return 0;
}

}  // namespace

void add_chat_command(CLI::App& app, const ConnectArgs& connect, int& exit_code) {
  auto args = std::make_shared<ChatArgs>();
  auto* sub = app.add_subcommand("chat", "Interactive multi-turn chat (one message per line)");
  sub->add_option("--system", args->system, "System prompt");
  add_sampling_flags(*sub, args->sampling);
  args->sampling.max_new_tokens = 1024;
  sub->add_flag("--hide-reasoning", args->hide_reasoning, "Do not show the <think> reasoning");
  sub->callback([args, &connect, &exit_code] { exit_code = run(connect, *args); });
}

}  // namespace ringctl
