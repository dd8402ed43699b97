#include "ringserve/protocol/frame.h"

#include <cstring>

namespace ringserve::protocol {
namespace {
constexpr size_t kHeadRoom = 8;
}

Frame Frame::from_payload(std::span<const uint8_t> payload) {
  Frame frame;
  frame.size_ = payload.size();
  const size_t words = (kHeadRoom + payload.size() + 7) / 8;
  frame.storage_ = std::make_unique_for_overwrite<uint64_t[]>(words);
  auto* bytes = reinterpret_cast<uint8_t*>(frame.storage_.get());
  const auto size = static_cast<uint32_t>(payload.size());
  // The wire prefix is little-endian; so are all hosts we build for (x86-64,
  // aarch64), which FlatBuffers itself also assumes here.
  std::memcpy(bytes + kHeadRoom - kFrameHeaderBytes, &size, sizeof(size));
  if (!payload.empty()) std::memcpy(bytes + kHeadRoom, payload.data(), payload.size());
  return frame;
}

std::span<const uint8_t> Frame::as_frame() const noexcept {
  if (!storage_) return {};
  const auto* bytes = reinterpret_cast<const uint8_t*>(storage_.get());
  return {bytes + kHeadRoom - kFrameHeaderBytes, kFrameHeaderBytes + size_};
}

std::span<const uint8_t> Frame::payload() const noexcept {
  if (!storage_) return {};
  return {reinterpret_cast<const uint8_t*>(storage_.get()) + kHeadRoom, size_};
}

}  // namespace ringserve::protocol
