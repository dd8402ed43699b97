#include <flatbuffers/flatbuffers.h>

#include <cstring>

#include "ringserve/protocol/codec.h"

namespace ringserve::protocol {
namespace {

// FlatBuffers asserts buffers stay below 2 GiB; keep every limit under it.
constexpr uint32_t kHardMaxFrameBytes = 1u << 30;

Status check_limits(const DecodeLimits& limits) {
  if (limits.max_frame_bytes < kMinEnvelopeBytes || limits.max_frame_bytes > kHardMaxFrameBytes) {
    return make_error(Errc::kInvalidArgument, "max_frame_bytes {} outside [{}, {}]",
                      limits.max_frame_bytes, kMinEnvelopeBytes, kHardMaxFrameBytes);
  }
  if (limits.max_depth == 0 || limits.max_tables == 0) {
    return make_error(Errc::kInvalidArgument, "decode limits: depth and tables must be > 0");
  }
  return ok();
}

}  // namespace

Expected<uint32_t> parse_frame_header(std::span<const uint8_t, kFrameHeaderBytes> header,
                                      const DecodeLimits& limits) {
  RS_TRY_STATUS(check_limits(limits));
  uint32_t size = 0;
  std::memcpy(&size, header.data(), sizeof(size));
  size = flatbuffers::EndianScalar(size);
  if (size > limits.max_frame_bytes) {
    return make_error(Errc::kTooLarge, "frame of {} bytes exceeds the limit of {}", size,
                      limits.max_frame_bytes);
  }
  if (size < kMinEnvelopeBytes) {
    return make_error(Errc::kProtocolError, "frame of {} bytes is too short for an envelope", size);
  }
  return size;
}

Expected<const wire::Envelope*> decode_envelope(std::span<const uint8_t> buffer,
                                                const DecodeLimits& limits) {
  RS_TRY_STATUS(check_limits(limits));
  if (reinterpret_cast<uintptr_t>(buffer.data()) % 8 != 0) {
    return make_error(Errc::kInvalidArgument, "envelope buffer is not 8-byte aligned");
  }
  if (buffer.size() > limits.max_frame_bytes) {
    return make_error(Errc::kTooLarge, "envelope of {} bytes exceeds the limit of {}",
                      buffer.size(), limits.max_frame_bytes);
  }
  if (buffer.size() < kMinEnvelopeBytes) {
    return make_error(Errc::kProtocolError, "envelope of {} bytes is too short", buffer.size());
  }
  if (!wire::EnvelopeBufferHasIdentifier(buffer.data())) {
    return make_error(Errc::kProtocolError, "not a ringserve envelope (file identifier)");
  }
  flatbuffers::Verifier::Options options;
  options.max_depth = limits.max_depth;
  options.max_tables = limits.max_tables;
  options.check_alignment = true;
  flatbuffers::Verifier verifier(buffer.data(), buffer.size(), options);
  if (!wire::VerifyEnvelopeBuffer(verifier)) {
    return make_error(Errc::kProtocolError, "envelope of {} bytes fails verification",
                      buffer.size());
  }
  const wire::Envelope* envelope = wire::GetEnvelope(buffer.data());
  const auto type = envelope->message_type();
  if (type == wire::Message::NONE || envelope->message() == nullptr) {
    return make_error(Errc::kProtocolError, "envelope carries no message");
  }
  if (static_cast<uint8_t>(type) > static_cast<uint8_t>(wire::Message::MAX)) {
    // The Verifier accepts unknown union members (a newer peer); we cannot read them.
    return make_error(Errc::kUnsupported, "message type {} is newer than this build",
                      static_cast<unsigned>(type));
  }
  return envelope;
}

Expected<Message> decode_message(std::span<const uint8_t> buffer, const DecodeLimits& limits) {
  const wire::Envelope* envelope = RS_TRY(decode_envelope(buffer, limits));
  return to_message(*envelope);
}

}  // namespace ringserve::protocol
