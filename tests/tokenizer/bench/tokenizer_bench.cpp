// Tokenizer speed benchmark (an executable, not a test):
//
//   tokenizer_bench [--tokenizer FILE] [--threads N] [--seconds S] [TEXT_FILE...]
//
// Encodes a corpus (the given files, or else the golden texts of the test
// fixtures) and prints MB/s: once on a cold piece cache, then steady state
// on one thread, then on N threads at once (aggregate and per thread).
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using ringserve::tokenizer::Tokenizer;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The golden texts: English, code, numbers, CJK, Hangul and random Unicode.
std::vector<std::string> golden_corpus(const std::string& path) {
  std::vector<std::string> docs;
  std::ifstream in(path);
  std::string row;
  while (std::getline(in, row)) {
    if (!row.empty()) docs.push_back(nlohmann::json::parse(row).at("text").get<std::string>());
  }
  return docs;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the calling thread: on a shared machine this measures the
// speed per core even when other processes take turns on it.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Rate {
  double wall = 0;  // bytes per wall-clock second
  double cpu = 0;   // bytes per second of this thread's CPU time
};

// Encodes the documents round after round for at least `seconds` of CPU time.
Rate encode_rate(const Tokenizer& tok, const std::vector<std::string>& docs, double seconds,
                 bool once = false) {
  size_t bytes = 0;
  const auto t0 = Clock::now();
  const double c0 = thread_cpu_seconds();
  do {
    for (const auto& d : docs) {
      bytes += d.size();
      if (tok.encode(d).empty() && !d.empty()) std::abort();
    }
  } while (!once && thread_cpu_seconds() - c0 < seconds);
  const auto b = static_cast<double>(bytes);
  return {b / seconds_since(t0), b / (thread_cpu_seconds() - c0)};
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_path =
      RINGSERVE_FIXTURES_DIR "/tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz";
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double seconds = 3.0;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tokenizer" && i + 1 < argc)
      tokenizer_path = argv[++i];
    else if (a == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (a == "-h" || a == "--help") {
      std::puts("tokenizer_bench [--tokenizer FILE] [--threads N] [--seconds S] [TEXT_FILE...]");
      return 0;
    } else
      files.push_back(a);
  }

  auto t0 = Clock::now();
  auto loaded = Tokenizer::load(tokenizer_path);
  if (!loaded) {
    std::fprintf(stderr, "tokenizer_bench: %s\n", loaded.error().to_string().c_str());
    return 1;
  }
  const auto tok = *loaded;
  std::printf("load: %.3f s (%s)\n", seconds_since(t0), tokenizer_path.c_str());

  std::vector<std::string> docs;
  if (files.empty()) {
    docs = golden_corpus(RINGSERVE_FIXTURES_DIR "/tokenizer/golden_encodings.jsonl");
    std::printf("corpus: golden texts (%zu documents)\n", docs.size());
  } else {
    // Split files into ~4 KiB documents at line ends, like prompts.
    for (const auto& f : files) {
      const std::string text = slurp(f);
      size_t start = 0;
      while (start < text.size()) {
        size_t end = std::min(text.size(), start + 4096);
        const size_t nl = text.find('\n', end);
        end = nl == std::string::npos ? text.size() : nl + 1;
        docs.push_back(text.substr(start, end - start));
        start = end;
      }
    }
    std::printf("corpus: %zu files, %zu documents\n", files.size(), docs.size());
  }
  size_t corpus_bytes = 0;
  for (const auto& d : docs) corpus_bytes += d.size();
  std::printf("corpus bytes: %zu\n", corpus_bytes);

  size_t tokens = 0;
  for (const auto& d : docs) tokens += tok->encode(d).size();
  std::printf("tokens: %zu (%.2f bytes/token)\n", tokens,
              static_cast<double>(corpus_bytes) / static_cast<double>(tokens));

  // Cold: a fresh tokenizer, so its piece cache starts empty.
  auto fresh = Tokenizer::load(tokenizer_path);
  if (!fresh) return 1;
  const Rate cold = encode_rate(**fresh, docs, 0, true);
  std::printf("encode, 1 thread, cold cache:   %7.2f MB/s per CPU-second (%.2f MB/s wall)\n",
              cold.cpu / 1e6, cold.wall / 1e6);
  const Rate warm = encode_rate(*tok, docs, seconds);
  std::printf("encode, 1 thread, steady state: %7.2f MB/s per CPU-second (%.2f MB/s wall)\n",
              warm.cpu / 1e6, warm.wall / 1e6);

  if (threads > 1) {
    std::vector<Rate> rates(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    const auto w0 = Clock::now();
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back(
          [&, t] { rates[static_cast<size_t>(t)] = encode_rate(*tok, docs, seconds); });
    }
    for (auto& th : pool) th.join();
    (void)w0;
    double cpu = 0, wall = 0;
    for (const Rate& r : rates) {
      cpu += r.cpu;
      wall += r.wall;
    }
    std::printf("encode, %d threads: %.2f MB/s per CPU-second each, %.2f MB/s wall aggregate\n",
                threads, cpu / threads / 1e6, wall / 1e6);
  }

  // Decode speed, for completeness.
  std::vector<std::vector<int32_t>> encoded;
  for (const auto& d : docs) encoded.push_back(tok->encode(d));
  t0 = Clock::now();
  size_t out_bytes = 0;
  do {
    for (const auto& ids : encoded) out_bytes += tok->decode(ids).size();
  } while (seconds_since(t0) < 1.0);
  std::printf("decode, 1 thread: %.2f MB/s\n",
              static_cast<double>(out_bytes) / seconds_since(t0) / 1e6);
  return 0;
}
