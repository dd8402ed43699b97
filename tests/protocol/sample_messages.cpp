#include "sample_messages.h"

namespace ringserve::testing {

using namespace protocol;

std::vector<Message> sample_messages() {
  std::vector<Message> out;
  out.push_back(Hello{1, "unit-test client", true, 1u << 16, 1u << 18});
  out.push_back(HelloAck{1,
                         "ringserve",
                         42,
                         true,
                         1u << 21,
                         "DeepSeek-R1-Distill-Qwen-7B",
                         152064,
                         4096,
                         1u << 20,
                         8,
                         {151643, 151645}});

  GenerateRequest text;
  text.request_id = 7;
  text.prompt = PromptText{"Why is the sky blue?"};
  text.sampling.max_new_tokens = 64;
  text.sampling.temperature = 0.7f;
  text.sampling.top_p = 0.9f;
  text.sampling.top_k = 40;
  text.sampling.seed = 1234;
  text.sampling.stop_strings = {"\n\n", "</think>"};
  text.sampling.stop_token_ids = {151643};
  text.sampling.ignore_eos = true;
  text.stream = false;
  text.top_logprobs = 5;
  out.push_back(text);

  GenerateRequest ids;
  ids.request_id = 8;
  ids.prompt = PromptIds{{1, 2, 3, 151643, -1}};
  out.push_back(ids);

  GenerateRequest chat;
  chat.request_id = 9;
  chat.prompt = PromptChat{{{"system", "Be brief."}, {"user", "2+2?"}}, false};
  chat.sampling.seed = 0;  // a zero seed is still an explicit seed
  out.push_back(chat);

  GenerateRequest empty_text;
  empty_text.request_id = 10;
  empty_text.prompt = PromptText{""};
  out.push_back(empty_text);

  out.push_back(Cancel{7});
  out.push_back(TokenEvent{7, {151, 152, 153}, "Rayleigh \xc3\xa9", {}});
  out.push_back(
      TokenEvent{7, {11, 12}, "ab", {{11, -0.25f, {{11, -0.25f}, {99, -1.5f}}}, {12, -0.5f, {}}}});
  out.push_back(Done{7, FinishReason::kStop, 6, 3, Timings{10, 20, 30, 40, 5, 9}, "\n\n", ""});
  out.push_back(Done{8, FinishReason::kError, 6, 0, Timings{}, "", "engine failed"});
  out.push_back(ErrorMessage{9, Errc::kTooLarge, "prompt of 9000 tokens exceeds 4096"});
  out.push_back(StatsRequest{77});
  Stats stats;
  stats.nonce = 77;
  stats.requests_total = 1000;
  stats.requests_active = 3;
  stats.queue_depth = 2;
  stats.prompt_tokens_total = 123456;
  stats.completion_tokens_total = 65432;
  stats.batch_size_histogram = {0, 10, 20, 30, 40};
  stats.kv_blocks_total = 512;
  stats.kv_blocks_used = 17;
  stats.sessions = 4;
  stats.uptime_us = 99999999;
  stats.engine = "cpu";
  stats.steps_total = 5000;
  stats.mean_step_us = 25000;
  stats.ttft_p50_us = 1;
  stats.ttft_p99_us = 2;
  stats.itl_p50_us = 3;
  stats.itl_p99_us = 4;
  out.push_back(stats);
  out.push_back(Ping{5, 123456789});
  out.push_back(Pong{5, 123456789});
  return out;
}

}  // namespace ringserve::testing
