// The decode path against malformed input: truncated, bit-flipped, randomly
// mutated, oversized and too deeply nested buffers. Every case must come back
// as an error value (or, for harmless mutations, a valid message); none may
// crash. The fuzzer (fuzz_decode_envelope) explores further under ASan.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>

#include "ringserve/protocol/codec.h"
#include "sample_messages.h"
#include "support/test_support.h"

namespace ringserve::protocol {
namespace {

// decode_envelope() requires 8-byte aligned storage, as a socket or ring
// reader provides; std::vector<uint64_t> guarantees it here.
class AlignedBytes {
 public:
  explicit AlignedBytes(std::span<const uint8_t> bytes)
      : words_((bytes.size() + 7) / 8 + 1), size_(bytes.size()) {
    if (!bytes.empty()) std::memcpy(words_.data(), bytes.data(), bytes.size());
  }
  std::span<const uint8_t> span() const {
    return {reinterpret_cast<const uint8_t*>(words_.data()), size_};
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words_.data()); }

 private:
  std::vector<uint64_t> words_;
  size_t size_;
};

// Decodes and, when the Verifier accepts, converts: both must hold up.
Expected<Message> decode_all(std::span<const uint8_t> bytes, const DecodeLimits& limits = {}) {
  AlignedBytes copy(bytes);
  return decode_message(copy.span(), limits);
}

std::vector<std::vector<uint8_t>> sample_payloads() {
  std::vector<std::vector<uint8_t>> out;
  for (const auto& m : testing::sample_messages()) {
    Frame f = encode(m);
    out.emplace_back(f.payload().begin(), f.payload().end());
  }
  return out;
}

TEST(CodecHostile, TruncationIsRejectedUnlessOnlyPaddingIsLost) {
  const auto messages = testing::sample_messages();
  for (size_t m = 0; m < messages.size(); ++m) {
    Frame frame = encode(messages[m]);
    const auto payload = frame.payload();
    size_t rejected = 0;
    for (size_t len = 0; len < payload.size(); ++len) {
      auto r = decode_all({payload.data(), len});
      if (!r) {
        EXPECT_EQ(r.error().code, Errc::kProtocolError);
        ++rejected;
        continue;
      }
      // The root table sits at the front and its children behind it, so a
      // cut that verifies can only have removed trailing alignment padding.
      EXPECT_GE(len + 8, payload.size()) << message_name(messages[m]);
      EXPECT_EQ(*r, messages[m]) << "prefix of " << len << " bytes decoded to another message";
    }
    EXPECT_GE(rejected + 8, payload.size()) << message_name(messages[m]);
  }
}

TEST(CodecHostile, EverySingleBitFlipIsRejectedOrStillValid) {
  size_t rejected = 0, accepted = 0;
  for (const auto& payload : sample_payloads()) {
    for (size_t bit = 0; bit < payload.size() * 8; ++bit) {
      auto mutated = payload;
      mutated[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      auto r = decode_all(mutated);
      if (r) {
        ++accepted;  // a flipped scalar or string byte is still a valid message
      } else {
        ++rejected;
        EXPECT_TRUE(r.error().code == Errc::kProtocolError || r.error().code == Errc::kUnsupported)
            << r.error().to_string();
      }
    }
  }
  // Offsets, vtables and the identifier make up much of each buffer: a
  // verifier that accepted everything would fail this.
  EXPECT_GT(rejected, 1000u);
  EXPECT_GT(accepted, 0u);
}

TEST(CodecHostile, RandomMutationCorpusNeverCrashes) {
  const uint64_t seed = testing::test_seed();
  std::mt19937_64 rng(seed);
  const auto payloads = sample_payloads();
  size_t rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    auto buf = payloads[rng() % payloads.size()];
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 5) {
        case 0:
          buf[rng() % buf.size()] = static_cast<uint8_t>(rng());
          break;
        case 1:
          buf.insert(buf.begin() + rng() % buf.size(), static_cast<uint8_t>(rng()));
          break;
        case 2:
          if (buf.size() > 1) buf.erase(buf.begin() + rng() % buf.size());
          break;
        case 3: {  // plant a large or negative offset where offsets live
          uint32_t v = static_cast<uint32_t>(rng());
          size_t at = (rng() % (buf.size() / 4)) * 4;
          std::memcpy(buf.data() + at, &v, 4);
          break;
        }
        case 4:
          buf.resize(buf.size() + rng() % 64, 0xff);
          break;
      }
      if (buf.empty()) buf.push_back(0);
    }
    auto r = decode_all(buf);
    if (!r) ++rejected;
  }
  EXPECT_GT(rejected, 10000u) << "seed " << seed;
}

TEST(CodecHostile, FrameHeaderRejectsOversizeBeforeAllocating) {
  DecodeLimits limits;
  limits.max_frame_bytes = 4096;
  auto header = [](uint32_t size) {
    std::array<uint8_t, kFrameHeaderBytes> h{};
    std::memcpy(h.data(), &size, 4);
    return h;
  };
  EXPECT_EQ(parse_frame_header(header(4097), limits).error().code, Errc::kTooLarge);
  EXPECT_EQ(parse_frame_header(header(0xffffffffu), limits).error().code, Errc::kTooLarge);
  EXPECT_EQ(parse_frame_header(header(0), limits).error().code, Errc::kProtocolError);
  EXPECT_EQ(parse_frame_header(header(7), limits).error().code, Errc::kProtocolError);
  EXPECT_EQ(*parse_frame_header(header(4096), limits), 4096u);
}

TEST(CodecHostile, OversizedBufferIsRejectedBeforeVerifying) {
  Stats big;
  big.batch_size_histogram.assign(2000, 1);  // 16 KB of vector
  Frame f = encode(big);
  DecodeLimits limits;
  limits.max_frame_bytes = 8192;
  auto r = decode_envelope(f.payload(), limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kTooLarge);
  EXPECT_TRUE(decode_envelope(f.payload(), DecodeLimits{}));
}

TEST(CodecHostile, DepthLimitRejectsNestedTables) {
  // Envelope -> TokenEvent -> [TokenLogprobs] -> TokenLogprobs -> [TokenLogprob] -> TokenLogprob
  TokenEvent e{1, {1}, "x", {{1, -1.0f, {{2, -2.0f}}}}};
  Frame f = encode(e);
  DecodeLimits shallow;
  shallow.max_depth = 3;
  auto r = decode_envelope(f.payload(), shallow);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kProtocolError);
  EXPECT_TRUE(decode_envelope(f.payload(), DecodeLimits{}));
}

TEST(CodecHostile, TableLimitRejectsManyTables) {
  TokenEvent e{1, {}, "", {}};
  for (int i = 0; i < 500; ++i) e.logprobs.push_back({i, -1.0f, {{i, -1.0f}}});
  Frame f = encode(e);
  DecodeLimits few;
  few.max_tables = 100;
  auto r = decode_envelope(f.payload(), few);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kProtocolError);
  EXPECT_TRUE(decode_envelope(f.payload(), DecodeLimits{}));
}

TEST(CodecHostile, WrongIdentifierIsRejected) {
  Frame f = encode(Ping{1, 2});
  AlignedBytes copy(f.payload());
  copy.data()[4] = 'X';
  auto r = decode_envelope(copy.span(), DecodeLimits{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kProtocolError);
  EXPECT_NE(r.error().message.find("identifier"), std::string::npos);
}

TEST(CodecHostile, EnvelopeWithoutMessageIsRejected) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(wire::CreateEnvelope(fbb), wire::EnvelopeIdentifier());
  AlignedBytes copy({fbb.GetBufferPointer(), fbb.GetSize()});
  auto r = decode_envelope(copy.span(), DecodeLimits{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kProtocolError);
}

TEST(CodecHostile, UnknownMessageTypeIsUnsupported) {
  // What a newer peer's message looks like to this build.
  flatbuffers::FlatBufferBuilder fbb;
  auto ping = wire::CreatePing(fbb, 1, 2);
  fbb.Finish(wire::CreateEnvelope(fbb, static_cast<wire::Message>(200), ping.Union()),
             wire::EnvelopeIdentifier());
  AlignedBytes copy({fbb.GetBufferPointer(), fbb.GetSize()});
  auto r = decode_envelope(copy.span(), DecodeLimits{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnsupported);
}

TEST(CodecHostile, GenerateRequestNeedsExactlyOnePromptForm) {
  flatbuffers::FlatBufferBuilder fbb;
  auto text = fbb.CreateString("hi");
  auto ids = fbb.CreateVector(std::vector<int32_t>{1, 2});
  auto req = wire::CreateGenerateRequest(fbb, 1, text, ids);
  fbb.Finish(wire::CreateEnvelope(fbb, wire::Message::GenerateRequest, req.Union()),
             wire::EnvelopeIdentifier());
  AlignedBytes both({fbb.GetBufferPointer(), fbb.GetSize()});
  auto r = decode_message(both.span(), DecodeLimits{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kProtocolError);

  flatbuffers::FlatBufferBuilder fbb2;
  auto none = wire::CreateGenerateRequest(fbb2, 2);
  fbb2.Finish(wire::CreateEnvelope(fbb2, wire::Message::GenerateRequest, none.Union()),
              wire::EnvelopeIdentifier());
  AlignedBytes neither({fbb2.GetBufferPointer(), fbb2.GetSize()});
  r = decode_message(neither.span(), DecodeLimits{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kProtocolError);
}

TEST(CodecHostile, UnknownFinishReasonIsUnsupported) {
  flatbuffers::FlatBufferBuilder fbb;
  auto done = wire::CreateDone(fbb, 1, static_cast<wire::FinishReason>(77));
  fbb.Finish(wire::CreateEnvelope(fbb, wire::Message::Done, done.Union()),
             wire::EnvelopeIdentifier());
  AlignedBytes copy({fbb.GetBufferPointer(), fbb.GetSize()});
  auto r = decode_message(copy.span(), DecodeLimits{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kUnsupported);
}

TEST(CodecHostile, MisalignedBufferIsACallerBug) {
  Frame f = encode(Ping{1, 2});
  std::vector<uint64_t> words(f.payload().size() / 8 + 2);
  auto* bytes = reinterpret_cast<uint8_t*>(words.data()) + 4;
  std::memcpy(bytes, f.payload().data(), f.payload().size());
  auto r = decode_envelope({bytes, f.payload().size()}, DecodeLimits{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
}

TEST(CodecHostile, NonsenseLimitsAreRejected) {
  Frame f = encode(Ping{1, 2});
  DecodeLimits bad;
  bad.max_frame_bytes = 0xffffffffu;  // above what FlatBuffers can address safely
  EXPECT_EQ(decode_envelope(f.payload(), bad).error().code, Errc::kInvalidArgument);
  bad = DecodeLimits{};
  bad.max_depth = 0;
  EXPECT_EQ(decode_envelope(f.payload(), bad).error().code, Errc::kInvalidArgument);
}

}  // namespace
}  // namespace ringserve::protocol
