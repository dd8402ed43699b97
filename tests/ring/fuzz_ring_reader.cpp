// libFuzzer: a ring reader over arbitrary shared bytes. The input is the
// ring's region (control block, then data); the reader must only ever return
// in-bounds records or kProtocolError.
#include <algorithm>
#include <cstring>

#include "ring_fixture.h"

using namespace ringserve;
using namespace ringserve::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static testing::LocalRing ring(512);
  auto region = ring.region();
  std::memset(region.data(), 0, region.size());
  std::memcpy(region.data(), data, std::min(size, region.size()));
  auto reader = RingReader::attach(ring.args());
  if (!reader) return 0;
  std::vector<uint8_t> out;
  for (int i = 0; i < 128; ++i) {
    auto got = reader->try_read(out);
    if (!got || !*got) break;
    if (out.size() > ring_max_payload(ring.capacity())) __builtin_trap();
  }
  return 0;
}
