// Encoding and decoding of wire Envelopes (protocol/ringserve.fbs).
//
// Received bytes reach typed data only through decode_envelope(): it checks
// the size limit and the file identifier and runs the FlatBuffers Verifier
// (with depth and table limits) before any field is read. Socket transport:
// read kFrameHeaderBytes, parse_frame_header() (rejects oversize before any
// allocation), read exactly that many bytes into an 8-byte aligned buffer,
// decode_envelope(), to_message().
#pragma once

#include <cstdint>
#include <span>

#include "ringserve/common/expected.h"
#include "ringserve/protocol/error_codes.h"
#include "ringserve/protocol/frame.h"
#include "ringserve/protocol/messages.h"
#include "ringserve/protocol/ringserve_generated.h"

namespace ringserve::protocol {

inline constexpr uint32_t kProtocolVersion = static_cast<uint32_t>(wire::ProtocolVersion::Current);
inline constexpr uint32_t kDefaultMaxFrameBytes = 1u << 20;
// An Envelope has at least a root offset and the file identifier.
inline constexpr uint32_t kMinEnvelopeBytes = 8;

struct DecodeLimits {
  uint32_t max_frame_bytes = kDefaultMaxFrameBytes;  // Envelope bytes, without the prefix
  // Nesting of tables and vectors; our deepest message (TokenEvent ->
  // logprobs -> top -> TokenLogprob) needs 5, so 16 leaves room to evolve.
  uint32_t max_depth = 16;
  uint32_t max_tables = 100000;
};

// Validates a size prefix: kTooLarge above limits.max_frame_bytes,
// kProtocolError below kMinEnvelopeBytes. Returns the Envelope size to read.
Expected<uint32_t> parse_frame_header(std::span<const uint8_t, kFrameHeaderBytes> header,
                                      const DecodeLimits& limits);

// `buffer` is one Envelope without size prefix, 8-byte aligned in memory
// (kInvalidArgument otherwise: that is a bug in the caller, not the peer).
// Errors: kTooLarge (over the limit), kProtocolError (short, wrong file
// identifier, fails the Verifier, or no message), kUnsupported (a message
// type newer than this build). The result points into `buffer`.
//
// The bytes must not change while they are verified and read: copy data out
// of shared memory first (the ring readers in shm_ring.h do).
Expected<const wire::Envelope*> decode_envelope(std::span<const uint8_t> buffer,
                                                const DecodeLimits& limits);

// Converts a verified Envelope to its native form. Also enforces what the
// schema cannot express: exactly one prompt form in a GenerateRequest
// (kProtocolError otherwise), known enum values (kUnsupported).
Expected<Message> to_message(const wire::Envelope& envelope);

// decode_envelope() + to_message().
Expected<Message> decode_message(std::span<const uint8_t> buffer, const DecodeLimits& limits);

// Encoders. protocol_version 0 in Hello/HelloAck is written as kProtocolVersion.
Frame encode(const Message& message);
Frame encode(const Hello& message);
Frame encode(const HelloAck& message);
Frame encode(const GenerateRequest& message);
Frame encode(const Cancel& message);
Frame encode(const TokenEvent& message);
Frame encode(const Done& message);
Frame encode(const ErrorMessage& message);
Frame encode(const StatsRequest& message);
Frame encode(const Stats& message);
Frame encode(const Ping& message);
Frame encode(const Pong& message);

// An ErrorMessage frame from an Error value (request_id 0: session-level).
Frame encode_error(uint64_t request_id, const Error& error);

}  // namespace ringserve::protocol
