// Load benchmark (not a test): times load_model on a spec and prints what it
// read and how fast, next to the bytes of INT8 weights produced.
//
//   bench_model_load SPEC [--threads N] [--repeat R]
//   bench_model_load synthetic:deepseek-r1-distill-qwen-7b --threads 16
//   bench_model_load /models/DeepSeek-R1-Distill-Qwen-7B
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "model/loader.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_model_load SPEC [--threads N] [--repeat R]\n");
    return 2;
  }
  std::string spec = argv[1];
  ringserve::model::LoadOptions options;
  int repeat = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) options.threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::atoi(argv[i + 1]);
  }
  for (int r = 0; r < repeat; ++r) {
    ringserve::model::LoadStats stats;
    options.stats = &stats;
    auto w = ringserve::model::load_model(spec, options);
    if (!w) {
      std::fprintf(stderr, "bench_model_load: %s\n", w.error().to_string().c_str());
      return 1;
    }
    std::printf(
        "{\"spec\": \"%s\", \"format\": \"%s\", \"threads\": %d, \"seconds\": %.3f, \"source_gb\": "
        "%.3f, "
        "\"gb_per_s\": %.2f, \"int8_linear_gb\": %.3f, \"embedding_gb\": %.3f}\n",
        spec.c_str(), stats.format.c_str(), options.threads, stats.seconds,
        stats.source_bytes / 1e9, stats.gb_per_s(), w->linear_bytes() / 1e9,
        w->embed_tokens.bf16.size() * 2 / 1e9);
  }
  return 0;
}
