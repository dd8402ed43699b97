#include <cstring>

#include "ring_internal.h"

namespace ringserve::protocol {

Status validate_ring_capacity(uint64_t capacity) {
  if (capacity < kRingMinCapacity || capacity > kRingMaxCapacity ||
      (capacity & (capacity - 1)) != 0) {
    return make_error(Errc::kInvalidArgument, "ring capacity {} is not a power of two in [{}, {}]",
                      capacity, kRingMinCapacity, kRingMaxCapacity);
  }
  return ok();
}

Status init_ring(std::span<std::byte> region, uint32_t capacity) {
  RS_TRY_STATUS(validate_ring_capacity(capacity));
  if (region.size() < ring_region_bytes(capacity)) {
    return make_error(Errc::kInvalidArgument, "ring region of {} bytes is smaller than {}",
                      region.size(), ring_region_bytes(capacity));
  }
  if (reinterpret_cast<uintptr_t>(region.data()) % kRingCacheLine != 0) {
    return make_error(Errc::kInvalidArgument, "ring region is not cache-line aligned");
  }
  std::memset(region.data(), 0, kRingControlBytes);
  return ok();
}

namespace detail {

Status check_endpoint_args(const RingEndpointArgs& args) {
  RS_TRY_STATUS(validate_ring_capacity(args.capacity));
  if (args.region.size() < ring_region_bytes(args.capacity)) {
    return make_error(Errc::kInvalidArgument, "ring region of {} bytes is smaller than {}",
                      args.region.size(), ring_region_bytes(args.capacity));
  }
  if (reinterpret_cast<uintptr_t>(args.region.data()) % kRingCacheLine != 0) {
    return make_error(Errc::kInvalidArgument, "ring region is not cache-line aligned");
  }
  if (args.data_bell == nullptr || !args.data_bell->valid() || args.space_bell == nullptr ||
      !args.space_bell->valid()) {
    return make_error(Errc::kInvalidArgument, "ring endpoint needs both doorbells");
  }
  return ok();
}

}  // namespace detail
}  // namespace ringserve::protocol
