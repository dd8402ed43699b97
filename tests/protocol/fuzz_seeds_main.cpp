// Writes one file per sample message (the bare Envelope) into argv[1]: the
// seed corpus of fuzz_decode_envelope.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "ringserve/protocol/codec.h"
#include "sample_messages.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " <corpus dir>\n";
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  int i = 0;
  for (const auto& m : ringserve::testing::sample_messages()) {
    auto frame = ringserve::protocol::encode(m);
    std::ofstream out(std::filesystem::path(argv[1]) / ("seed-" + std::to_string(i++)),
                      std::ios::binary);
    out.write(reinterpret_cast<const char*>(frame.payload().data()),
              static_cast<std::streamsize>(frame.payload().size()));
  }
  return 0;
}
