// Running one request through the SDK and collecting what came back.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ringserve/client/client.h"

namespace ringserve::e2e {

struct Outcome {
  std::vector<int32_t> ids;
  std::string text;
  std::optional<Done> done;
  std::string error;  // from the SDK (not from Done)
};

inline GenerateRequest ids_request(std::vector<int32_t> prompt, int max_new_tokens,
                                   bool ignore_eos = false) {
  GenerateRequest r;
  r.prompt = protocol::PromptIds{std::move(prompt)};
  r.sampling.max_new_tokens = static_cast<uint32_t>(max_new_tokens);
  r.sampling.ignore_eos = ignore_eos;
  return r;
}

inline Outcome collect(Stream& stream) {
  Outcome out;
  while (true) {
    auto event = stream.next();
    if (!event) {
      out.error = event.error().to_string();
      return out;
    }
    if (!*event) return out;
    if (const auto* t = std::get_if<TokenEvent>(&**event)) {
      out.ids.insert(out.ids.end(), t->token_ids.begin(), t->token_ids.end());
      out.text += t->text;
    } else {
      out.done = std::get<Done>(**event);
    }
  }
}

inline Outcome generate(Client& client, const GenerateRequest& request) {
  auto stream = client.generate(request);
  if (!stream) return Outcome{{}, {}, std::nullopt, stream.error().to_string()};
  return collect(*stream);
}

}  // namespace ringserve::e2e
