// Old writer / new reader and new writer / old reader, with an older schema
// revision (evolution/ringserve_v0.fbs) compiled into this test.
#include <gtest/gtest.h>

#include "ringserve/protocol/codec.h"
#include "ringserve_v0_generated.h"

namespace ringserve::protocol {
namespace {

Frame finish_v0(flatbuffers::FlatBufferBuilder& fbb, wire_v0::Message type,
                flatbuffers::Offset<void> message) {
  fbb.Finish(wire_v0::CreateEnvelope(fbb, type, message), wire_v0::EnvelopeIdentifier());
  return Frame::from_payload({fbb.GetBufferPointer(), fbb.GetSize()});
}

TEST(SchemaEvolution, OldGenerateRequestDecodesWithDefaults) {
  flatbuffers::FlatBufferBuilder fbb;
  auto text = fbb.CreateString("hello");
  auto sampling = wire_v0::CreateSamplingParams(fbb, 32, 0.5f);
  auto req = wire_v0::CreateGenerateRequest(fbb, 11, text, 0, 0, sampling);
  Frame f = finish_v0(fbb, wire_v0::Message::GenerateRequest, req.Union());

  auto decoded = decode_message(f.payload(), DecodeLimits{});
  ASSERT_TRUE(decoded) << decoded.error().to_string();
  const auto& r = std::get<GenerateRequest>(*decoded);
  EXPECT_EQ(r.request_id, 11u);
  EXPECT_EQ(std::get<PromptText>(r.prompt).text, "hello");
  EXPECT_EQ(r.sampling.max_new_tokens, 32u);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  // Fields the old writer did not know take the schema defaults.
  EXPECT_FLOAT_EQ(r.sampling.top_p, 1.0f);
  EXPECT_EQ(r.sampling.top_k, 0u);
  EXPECT_FALSE(r.sampling.seed.has_value());
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.top_logprobs, 0u);
}

TEST(SchemaEvolution, OldHelloDecodes) {
  flatbuffers::FlatBufferBuilder fbb;
  auto hello = wire_v0::CreateHelloDirect(fbb, kProtocolVersion, "old client");
  Frame f = finish_v0(fbb, wire_v0::Message::Hello, hello.Union());
  auto decoded = decode_message(f.payload(), DecodeLimits{});
  ASSERT_TRUE(decoded) << decoded.error().to_string();
  const auto& h = std::get<Hello>(*decoded);
  EXPECT_EQ(h.client_name, "old client");
  EXPECT_FALSE(h.want_shm);
}

TEST(SchemaEvolution, NewBuffersVerifyWithTheOldSchema) {
  GenerateRequest r;
  r.request_id = 5;
  r.prompt = PromptIds{{1, 2, 3}};
  r.sampling.top_k = 40;
  r.sampling.seed = 9;
  r.top_logprobs = 3;
  Frame f = encode(r);
  flatbuffers::Verifier verifier(f.payload().data(), f.payload().size());
  ASSERT_TRUE(wire_v0::VerifyEnvelopeBuffer(verifier));
  const auto* env = wire_v0::GetEnvelope(f.payload().data());
  const auto* old = env->message_as_GenerateRequest();
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->request_id(), 5u);
  ASSERT_NE(old->prompt_ids(), nullptr);
  EXPECT_EQ(old->prompt_ids()->size(), 3u);
}

TEST(SchemaEvolution, OldReaderSeesNewMessageTypesAsUnknown) {
  Frame f = encode(Ping{1, 2});  // Ping is not in the old union
  flatbuffers::Verifier verifier(f.payload().data(), f.payload().size());
  ASSERT_TRUE(wire_v0::VerifyEnvelopeBuffer(verifier));
  const auto* env = wire_v0::GetEnvelope(f.payload().data());
  EXPECT_GT(static_cast<int>(env->message_type()), static_cast<int>(wire_v0::Message::MAX));
}

}  // namespace
}  // namespace ringserve::protocol
