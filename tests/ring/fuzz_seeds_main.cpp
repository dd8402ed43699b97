// Writes ring images (control block + data of a 512-byte ring) holding valid
// records, some wrapped through a padding record, into argv[1]: the seed
// corpus of fuzz_ring_reader.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "ring_fixture.h"

int main(int argc, char** argv) {
  using namespace ringserve;
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " <corpus dir>\n";
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  for (int variant = 0; variant < 8; ++variant) {
    testing::LocalRing ring(512);
    auto writer = ring.writer();
    auto reader = ring.reader();
    std::vector<uint8_t> out;
    // Advance both ends so the records below wrap at different points.
    for (int i = 0; i < variant * 3; ++i) {
      (void)writer.try_write(testing::make_record(static_cast<uint64_t>(i), 60));
      (void)reader.try_read(out);
    }
    for (uint64_t seq = 0; seq < 6; ++seq) {
      (void)writer.try_write(testing::make_record(seq * 7 + static_cast<uint64_t>(variant), 90));
    }
    const auto region = ring.region();
    std::ofstream file(std::filesystem::path(argv[1]) / ("ring-" + std::to_string(variant)),
                       std::ios::binary);
    file.write(reinterpret_cast<const char*>(region.data()),
               static_cast<std::streamsize>(region.size()));
  }
  return 0;
}
