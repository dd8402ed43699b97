// A ring in private memory with its two doorbells, and self-checking record
// contents for the ring tests, the stress tests and the fuzzer seeds.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringserve/protocol/shm_ring.h"

namespace ringserve::testing {

class LocalRing {
 public:
  explicit LocalRing(uint32_t capacity);

  protocol::RingEndpointArgs args() const;
  protocol::RingWriter writer() const;  // aborts the test on error
  protocol::RingReader reader() const;

  uint32_t capacity() const { return capacity_; }
  protocol::RingControl& control() const {
    return *reinterpret_cast<protocol::RingControl*>(mem_.get());
  }
  std::byte* data() const { return mem_.get() + protocol::kRingControlBytes; }
  std::span<std::byte> region() const {
    return {mem_.get(), protocol::ring_region_bytes(capacity_)};
  }
  const protocol::Doorbell& data_bell() const { return data_bell_; }
  const protocol::Doorbell& space_bell() const { return space_bell_; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  uint32_t capacity_;
  std::unique_ptr<std::byte[], Free> mem_;
  protocol::Doorbell data_bell_, space_bell_;
};

// Record `seq`: its size (at least 8, often odd) and every byte follow from
// seq, so a reader can tell a lost, duplicated, reordered or torn record.
size_t record_size(uint64_t seq, size_t max_size);
std::vector<uint8_t> make_record(uint64_t seq, size_t max_size);
// Empty string when `bytes` is record `seq`; else what is wrong.
std::string check_record(std::span<const uint8_t> bytes, uint64_t seq, size_t max_size);

// True when the fd is readable right now (a rung doorbell).
bool readable(int fd);

}  // namespace ringserve::testing
