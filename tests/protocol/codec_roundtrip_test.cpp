#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <set>

#include "ringserve/protocol/codec.h"
#include "sample_messages.h"

namespace ringserve::protocol {
namespace {

using ::testing::ElementsAreArray;

TEST(CodecRoundTrip, EveryMessageTypeSurvivesEncodeDecode) {
  std::set<size_t> kinds;
  for (const Message& original : testing::sample_messages()) {
    SCOPED_TRACE(message_name(original));
    Frame frame = encode(original);
    auto decoded = decode_message(frame.payload(), DecodeLimits{});
    ASSERT_TRUE(decoded) << decoded.error().to_string();
    EXPECT_EQ(*decoded, original);
    kinds.insert(original.index());
  }
  EXPECT_EQ(kinds.size(), std::variant_size_v<Message>) << "a message type has no sample";
}

TEST(CodecRoundTrip, DecodedEnvelopeCarriesTheUnionType) {
  Frame frame = encode(Ping{9, 10});
  auto envelope = decode_envelope(frame.payload(), DecodeLimits{});
  ASSERT_TRUE(envelope);
  EXPECT_EQ((*envelope)->message_type(), wire::Message::Ping);
  EXPECT_EQ((*envelope)->message_as_Ping()->nonce(), 9u);
}

TEST(CodecRoundTrip, FrameIsSizePrefixedPayload) {
  Frame frame = encode(Cancel{3});
  auto bytes = frame.as_frame();
  auto payload = frame.payload();
  ASSERT_EQ(bytes.size(), payload.size() + kFrameHeaderBytes);
  EXPECT_EQ(bytes.data() + kFrameHeaderBytes, payload.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(payload.data()) % 8, 0u);
  std::array<uint8_t, kFrameHeaderBytes> header{};
  std::memcpy(header.data(), bytes.data(), header.size());
  auto size = parse_frame_header(header, DecodeLimits{});
  ASSERT_TRUE(size);
  EXPECT_EQ(*size, payload.size());
  EXPECT_THAT(std::vector<uint8_t>(payload.begin() + 4, payload.begin() + 8),
              ElementsAreArray({'R', 'S', 'V', '1'}));
}

TEST(CodecRoundTrip, HelloFillsTheCurrentVersion) {
  Frame frame = encode(Hello{});
  auto decoded = decode_message(frame.payload(), DecodeLimits{});
  ASSERT_TRUE(decoded);
  EXPECT_EQ(std::get<Hello>(*decoded).protocol_version, kProtocolVersion);
  EXPECT_EQ(kProtocolVersion, 1u);
}

TEST(CodecRoundTrip, EncodeErrorKeepsCodeAndMessage) {
  Frame frame = encode_error(12, make_error(Errc::kResourceExhausted, "queue full ({})", 64));
  auto decoded = decode_message(frame.payload(), DecodeLimits{});
  ASSERT_TRUE(decoded);
  const auto& e = std::get<ErrorMessage>(*decoded);
  EXPECT_EQ(e.request_id, 12u);
  EXPECT_EQ(e.code, Errc::kResourceExhausted);
  EXPECT_EQ(e.message, "queue full (64)");
}

TEST(CodecRoundTrip, MessageNamesMatchTheSchema) {
  EXPECT_STREQ(message_name(Message(GenerateRequest{})), "GenerateRequest");
  EXPECT_STREQ(message_name(Message(ErrorMessage{})), "Error");
  EXPECT_STREQ(message_name(Message(Pong{})), "Pong");
}

TEST(CodecRoundTrip, FrameMovesWithoutCopyingTheBytes) {
  Frame a = encode(Ping{1, 2});
  const uint8_t* data = a.payload().data();
  Frame b = std::move(a);
  EXPECT_EQ(b.payload().data(), data);
  EXPECT_TRUE(a.empty());  // NOLINT: moved-from state is specified (empty)
}

}  // namespace
}  // namespace ringserve::protocol
