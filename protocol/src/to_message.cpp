#include <flatbuffers/flatbuffers.h>

#include "ringserve/protocol/codec.h"

namespace ringserve::protocol {
namespace {

std::string str(const flatbuffers::String* s) {
  return s ? s->str() : std::string();
}

template <class T>
std::vector<T> vec(const flatbuffers::Vector<T>* v) {
  return v ? std::vector<T>(v->begin(), v->end()) : std::vector<T>();
}

Hello convert(const wire::Hello& m) {
  return Hello{m.protocol_version(), str(m.client_name()), m.want_shm(), m.request_ring_bytes(),
               m.event_ring_bytes()};
}

HelloAck convert(const wire::HelloAck& m) {
  return HelloAck{m.protocol_version(), str(m.server_name()),  m.session_id(),
                  m.shm_granted(),      m.shm_bytes(),         str(m.model_name()),
                  m.vocab_size(),       m.max_context(),       m.max_frame_bytes(),
                  m.max_inflight(),     vec(m.eos_token_ids())};
}

SamplingParams convert(const wire::SamplingParams* m) {
  SamplingParams p;
  if (m == nullptr) return p;  // absent table: every field at its default
  p.max_new_tokens = m->max_new_tokens();
  p.temperature = m->temperature();
  p.top_p = m->top_p();
  p.top_k = m->top_k();
  if (m->has_seed()) p.seed = m->seed();
  if (const auto* stops = m->stop_strings()) {
    p.stop_strings.reserve(stops->size());
    for (const auto* s : *stops) p.stop_strings.push_back(str(s));
  }
  p.stop_token_ids = vec(m->stop_token_ids());
  p.ignore_eos = m->ignore_eos();
  return p;
}

Expected<GenerateRequest> convert(const wire::GenerateRequest& m) {
  const int forms =
      (m.prompt_text() != nullptr) + (m.prompt_ids() != nullptr) + (m.messages() != nullptr);
  if (forms != 1) {
    return make_error(Errc::kProtocolError,
                      "request {}: exactly one of prompt_text, prompt_ids, messages must be set "
                      "(got {})",
                      m.request_id(), forms);
  }
  GenerateRequest r;
  r.request_id = m.request_id();
  if (m.prompt_text()) {
    r.prompt = PromptText{m.prompt_text()->str()};
  } else if (m.prompt_ids()) {
    r.prompt = PromptIds{vec(m.prompt_ids())};
  } else {
    PromptChat chat;
    chat.messages.reserve(m.messages()->size());
    for (const auto* msg : *m.messages()) {
      // A null element cannot come out of the Verifier, but costs nothing to reject.
      if (msg == nullptr) return make_error(Errc::kProtocolError, "null chat message");
      chat.messages.push_back(ChatMessage{str(msg->role()), str(msg->content())});
    }
    chat.add_generation_prompt = m.add_generation_prompt();
    r.prompt = std::move(chat);
  }
  r.sampling = convert(m.sampling());
  r.stream = m.stream();
  r.top_logprobs = m.top_logprobs();
  return r;
}

TokenEvent convert(const wire::TokenEvent& m) {
  TokenEvent e{m.request_id(), vec(m.token_ids()), str(m.text()), {}};
  if (const auto* lps = m.logprobs()) {
    e.logprobs.reserve(lps->size());
    for (const auto* lp : *lps) {
      TokenLogprobs out{lp->token_id(), lp->logprob(), {}};
      if (const auto* top = lp->top()) {
        out.top.reserve(top->size());
        for (const auto* alt : *top)
          out.top.push_back(TokenLogprob{alt->token_id(), alt->logprob()});
      }
      e.logprobs.push_back(std::move(out));
    }
  }
  return e;
}

Expected<Done> convert(const wire::Done& m) {
  const auto reason = static_cast<uint8_t>(m.reason());
  if (reason > static_cast<uint8_t>(wire::FinishReason::MAX)) {
    return make_error(Errc::kUnsupported, "request {}: unknown finish reason {}", m.request_id(),
                      static_cast<unsigned>(reason));
  }
  Done d;
  d.request_id = m.request_id();
  d.reason = static_cast<FinishReason>(reason);
  d.prompt_tokens = m.prompt_tokens();
  d.completion_tokens = m.completion_tokens();
  if (const auto* t = m.timings()) {
    d.timings = Timings{t->queue_us(), t->prefill_us(),  t->first_token_us(),
                        t->total_us(), t->mean_itl_us(), t->max_itl_us()};
  }
  d.stop_string = str(m.stop_string());
  d.error_message = str(m.error_message());
  return d;
}

ErrorMessage convert(const wire::Error& m) {
  return ErrorMessage{m.request_id(), from_wire(m.code()), str(m.message())};
}

Stats convert(const wire::Stats& m) {
  Stats s;
  s.nonce = m.nonce();
  s.requests_total = m.requests_total();
  s.requests_active = m.requests_active();
  s.queue_depth = m.queue_depth();
  s.prompt_tokens_total = m.prompt_tokens_total();
  s.completion_tokens_total = m.completion_tokens_total();
  s.batch_size_histogram = vec(m.batch_size_histogram());
  s.kv_blocks_total = m.kv_blocks_total();
  s.kv_blocks_used = m.kv_blocks_used();
  s.sessions = m.sessions();
  s.uptime_us = m.uptime_us();
  s.engine = str(m.engine());
  s.steps_total = m.steps_total();
  s.mean_step_us = m.mean_step_us();
  s.ttft_p50_us = m.ttft_p50_us();
  s.ttft_p99_us = m.ttft_p99_us();
  s.itl_p50_us = m.itl_p50_us();
  s.itl_p99_us = m.itl_p99_us();
  return s;
}

}  // namespace

Expected<Message> to_message(const wire::Envelope& e) {
  using wire::Message;
  // Guards callers that built the envelope themselves; decode_envelope()
  // has already rejected this.
  if (e.message() == nullptr)
    return make_error(Errc::kProtocolError, "envelope carries no message");
  switch (e.message_type()) {
    case Message::Hello:
      return protocol::Message(convert(*e.message_as_Hello()));
    case Message::HelloAck:
      return protocol::Message(convert(*e.message_as_HelloAck()));
    case Message::GenerateRequest: {
      auto r = RS_TRY(convert(*e.message_as_GenerateRequest()));
      return protocol::Message(std::move(r));
    }
    case Message::Cancel:
      return protocol::Message(Cancel{e.message_as_Cancel()->request_id()});
    case Message::TokenEvent:
      return protocol::Message(convert(*e.message_as_TokenEvent()));
    case Message::Done: {
      auto d = RS_TRY(convert(*e.message_as_Done()));
      return protocol::Message(std::move(d));
    }
    case Message::Error:
      return protocol::Message(convert(*e.message_as_Error()));
    case Message::StatsRequest:
      return protocol::Message(StatsRequest{e.message_as_StatsRequest()->nonce()});
    case Message::Stats:
      return protocol::Message(convert(*e.message_as_Stats()));
    case Message::Ping: {
      const auto* p = e.message_as_Ping();
      return protocol::Message(Ping{p->nonce(), p->client_time_ns()});
    }
    case Message::Pong: {
      const auto* p = e.message_as_Pong();
      return protocol::Message(Pong{p->nonce(), p->client_time_ns()});
    }
    case Message::NONE:
      return make_error(Errc::kProtocolError, "envelope carries no message");
  }
  return make_error(Errc::kUnsupported, "message type {} is newer than this build",
                    static_cast<unsigned>(e.message_type()));
}

}  // namespace ringserve::protocol
