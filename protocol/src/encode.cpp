#include <flatbuffers/flatbuffers.h>

#include "ringserve/protocol/codec.h"

namespace ringserve::protocol {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

constexpr size_t kInitialBuilderBytes = 256;

template <class T>
Frame finish(FlatBufferBuilder& fbb, wire::Message type, Offset<T> message) {
  auto envelope = wire::CreateEnvelope(fbb, type, message.Union());
  fbb.Finish(envelope, wire::EnvelopeIdentifier());
  return Frame::from_payload({fbb.GetBufferPointer(), fbb.GetSize()});
}

uint32_t version_or_current(uint32_t v) {
  return v == 0 ? kProtocolVersion : v;
}

Offset<flatbuffers::String> string_or_null(FlatBufferBuilder& fbb, const std::string& s) {
  return s.empty() ? 0 : fbb.CreateString(s);
}

template <class T>
Offset<flatbuffers::Vector<T>> vector_or_null(FlatBufferBuilder& fbb, const std::vector<T>& v) {
  return v.empty() ? 0 : fbb.CreateVector(v);
}

Offset<wire::SamplingParams> build_sampling(FlatBufferBuilder& fbb, const SamplingParams& p) {
  auto stops = p.stop_strings.empty() ? 0 : fbb.CreateVectorOfStrings(p.stop_strings);
  auto stop_ids = vector_or_null(fbb, p.stop_token_ids);
  return wire::CreateSamplingParams(fbb, p.max_new_tokens, p.temperature, p.top_p, p.top_k,
                                    p.seed.value_or(0), p.seed.has_value(), stops, stop_ids,
                                    p.ignore_eos);
}

}  // namespace

Frame encode(const Hello& m) {
  FlatBufferBuilder fbb(kInitialBuilderBytes);
  auto name = string_or_null(fbb, m.client_name);
  return finish(fbb, wire::Message::Hello,
                wire::CreateHello(fbb, version_or_current(m.protocol_version), name, m.want_shm,
                                  m.request_ring_bytes, m.event_ring_bytes));
}

Frame encode(const HelloAck& m) {
  FlatBufferBuilder fbb(kInitialBuilderBytes);
  auto server = string_or_null(fbb, m.server_name);
  auto model = string_or_null(fbb, m.model_name);
  auto eos = vector_or_null(fbb, m.eos_token_ids);
  return finish(fbb, wire::Message::HelloAck,
                wire::CreateHelloAck(fbb, version_or_current(m.protocol_version), server,
                                     m.session_id, m.shm_granted, m.shm_bytes, model, m.vocab_size,
                                     m.max_context, m.max_frame_bytes, m.max_inflight, eos));
}

Frame encode(const GenerateRequest& m) {
  FlatBufferBuilder fbb(kInitialBuilderBytes);
  Offset<flatbuffers::String> text = 0;
  Offset<flatbuffers::Vector<int32_t>> ids = 0;
  Offset<flatbuffers::Vector<Offset<wire::ChatMessage>>> chat = 0;
  bool add_generation_prompt = true;
  if (const auto* p = std::get_if<PromptText>(&m.prompt)) {
    // An empty text prompt is still a prompt form: write the (empty) string.
    text = fbb.CreateString(p->text);
  } else if (const auto* p = std::get_if<PromptIds>(&m.prompt)) {
    ids = fbb.CreateVector(p->ids);
  } else if (const auto* p = std::get_if<PromptChat>(&m.prompt)) {
    std::vector<Offset<wire::ChatMessage>> messages;
    messages.reserve(p->messages.size());
    for (const auto& msg : p->messages) {
      auto role = fbb.CreateString(msg.role);
      auto content = fbb.CreateString(msg.content);
      messages.push_back(wire::CreateChatMessage(fbb, role, content));
    }
    chat = fbb.CreateVector(messages);
    add_generation_prompt = p->add_generation_prompt;
  }
  auto sampling = build_sampling(fbb, m.sampling);
  return finish(fbb, wire::Message::GenerateRequest,
                wire::CreateGenerateRequest(fbb, m.request_id, text, ids, chat, sampling, m.stream,
                                            m.top_logprobs, add_generation_prompt));
}

Frame encode(const Cancel& m) {
  FlatBufferBuilder fbb(64);
  return finish(fbb, wire::Message::Cancel, wire::CreateCancel(fbb, m.request_id));
}

Frame encode(const TokenEvent& m) {
  FlatBufferBuilder fbb(kInitialBuilderBytes);
  auto ids = vector_or_null(fbb, m.token_ids);
  auto text = string_or_null(fbb, m.text);
  Offset<flatbuffers::Vector<Offset<wire::TokenLogprobs>>> logprobs = 0;
  if (!m.logprobs.empty()) {
    std::vector<Offset<wire::TokenLogprobs>> entries;
    entries.reserve(m.logprobs.size());
    for (const auto& lp : m.logprobs) {
      Offset<flatbuffers::Vector<Offset<wire::TokenLogprob>>> top = 0;
      if (!lp.top.empty()) {
        std::vector<Offset<wire::TokenLogprob>> alts;
        alts.reserve(lp.top.size());
        for (const auto& alt : lp.top) {
          alts.push_back(wire::CreateTokenLogprob(fbb, alt.token_id, alt.logprob));
        }
        top = fbb.CreateVector(alts);
      }
      entries.push_back(wire::CreateTokenLogprobs(fbb, lp.token_id, lp.logprob, top));
    }
    logprobs = fbb.CreateVector(entries);
  }
  return finish(fbb, wire::Message::TokenEvent,
                wire::CreateTokenEvent(fbb, m.request_id, ids, text, logprobs));
}

Frame encode(const Done& m) {
  FlatBufferBuilder fbb(kInitialBuilderBytes);
  const auto& t = m.timings;
  auto timings = wire::CreateTimings(fbb, t.queue_us, t.prefill_us, t.first_token_us, t.total_us,
                                     t.mean_itl_us, t.max_itl_us);
  auto stop = string_or_null(fbb, m.stop_string);
  auto err = string_or_null(fbb, m.error_message);
  return finish(fbb, wire::Message::Done,
                wire::CreateDone(fbb, m.request_id, static_cast<wire::FinishReason>(m.reason),
                                 m.prompt_tokens, m.completion_tokens, timings, stop, err));
}

Frame encode(const ErrorMessage& m) {
  FlatBufferBuilder fbb(kInitialBuilderBytes);
  auto text = string_or_null(fbb, m.message);
  return finish(fbb, wire::Message::Error,
                wire::CreateError(fbb, m.request_id, to_wire(m.code), text));
}

Frame encode(const StatsRequest& m) {
  FlatBufferBuilder fbb(64);
  return finish(fbb, wire::Message::StatsRequest, wire::CreateStatsRequest(fbb, m.nonce));
}

Frame encode(const Stats& m) {
  FlatBufferBuilder fbb(kInitialBuilderBytes);
  auto histogram = vector_or_null(fbb, m.batch_size_histogram);
  auto engine = string_or_null(fbb, m.engine);
  return finish(fbb, wire::Message::Stats,
                wire::CreateStats(fbb, m.nonce, m.requests_total, m.requests_active, m.queue_depth,
                                  m.prompt_tokens_total, m.completion_tokens_total, histogram,
                                  m.kv_blocks_total, m.kv_blocks_used, m.sessions, m.uptime_us,
                                  engine, m.steps_total, m.mean_step_us, m.ttft_p50_us,
                                  m.ttft_p99_us, m.itl_p50_us, m.itl_p99_us));
}

Frame encode(const Ping& m) {
  FlatBufferBuilder fbb(64);
  return finish(fbb, wire::Message::Ping, wire::CreatePing(fbb, m.nonce, m.client_time_ns));
}

Frame encode(const Pong& m) {
  FlatBufferBuilder fbb(64);
  return finish(fbb, wire::Message::Pong, wire::CreatePong(fbb, m.nonce, m.client_time_ns));
}

Frame encode(const Message& message) {
  return std::visit([](const auto& m) { return encode(m); }, message);
}

Frame encode_error(uint64_t request_id, const Error& error) {
  return encode(ErrorMessage{request_id, error.code, error.message});
}

}  // namespace ringserve::protocol
