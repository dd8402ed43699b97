#include "ring_fixture.h"

#include <poll.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace ringserve::testing {

using namespace protocol;

namespace {

[[noreturn]] void die(const Error& e) {
  std::fprintf(stderr, "ring fixture: %s\n", e.to_string().c_str());
  std::abort();
}

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

LocalRing::LocalRing(uint32_t capacity)
    : capacity_(capacity),
      mem_(static_cast<std::byte*>(
          std::aligned_alloc(kRingCacheLine, ring_region_bytes(capacity)))) {
  std::memset(mem_.get(), 0xcd, ring_region_bytes(capacity));  // stale bytes, not zeros
  if (auto st = init_ring(region(), capacity); !st) die(st.error());
  auto d = Doorbell::create();
  auto s = Doorbell::create();
  if (!d || !s) die(d ? s.error() : d.error());
  data_bell_ = std::move(*d);
  space_bell_ = std::move(*s);
}

RingEndpointArgs LocalRing::args() const {
  return RingEndpointArgs{region(), capacity_, &data_bell_, &space_bell_, nullptr};
}

RingWriter LocalRing::writer() const {
  auto w = RingWriter::attach(args());
  if (!w) die(w.error());
  return std::move(*w);
}

RingReader LocalRing::reader() const {
  auto r = RingReader::attach(args());
  if (!r) die(r.error());
  return std::move(*r);
}

size_t record_size(uint64_t seq, size_t max_size) {
  return 8 + mix(seq) % (max_size - 7);
}

std::vector<uint8_t> make_record(uint64_t seq, size_t max_size) {
  std::vector<uint8_t> out(record_size(seq, max_size));
  std::memcpy(out.data(), &seq, 8);
  uint64_t state = mix(seq ^ 0x5555);
  for (size_t i = 8; i < out.size(); ++i) {
    if (i % 8 == 0) state = mix(state);
    out[i] = static_cast<uint8_t>(state >> (8 * (i % 8)));
  }
  return out;
}

std::string check_record(std::span<const uint8_t> bytes, uint64_t seq, size_t max_size) {
  if (bytes.size() >= 8) {
    uint64_t got = 0;
    std::memcpy(&got, bytes.data(), 8);
    if (got != seq)
      return "record " + std::to_string(got) + " where " + std::to_string(seq) + " was due";
  }
  const auto want = make_record(seq, max_size);
  if (bytes.size() != want.size()) {
    return "record " + std::to_string(seq) + " has " + std::to_string(bytes.size()) +
           " bytes, expected " + std::to_string(want.size());
  }
  if (std::memcmp(bytes.data(), want.data(), want.size()) != 0) {
    return "record " + std::to_string(seq) + " has corrupted bytes";
  }
  return {};
}

bool readable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) != 0;
}

}  // namespace ringserve::testing
