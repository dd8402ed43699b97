// Helpers shared by ring_writer.cpp and ring_reader.cpp (not installed).
#pragma once

#include <atomic>
#include <cstdint>

#include "ringserve/protocol/shm_ring.h"

namespace ringserve::protocol::detail {

static_assert(std::atomic_ref<uint64_t>::required_alignment <= alignof(uint64_t));
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "ring indices are shared between processes: atomics must be address-free");
static_assert(std::atomic<uint32_t>::is_always_lock_free);

inline std::atomic_ref<uint64_t> shared(uint64_t& word) {
  return std::atomic_ref<uint64_t>(word);
}
inline std::atomic_ref<uint32_t> shared(uint32_t& word) {
  return std::atomic_ref<uint32_t>(word);
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Checks what both endpoints need from their arguments.
Status check_endpoint_args(const RingEndpointArgs& args);

}  // namespace ringserve::protocol::detail
