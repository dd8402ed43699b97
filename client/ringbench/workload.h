// The requests ringbench sends: token-id prompts of exactly the asked
// length (so no tokenizer is involved and lengths are exact), and the times
// at which an open-loop run sends them.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace ringbench {

// `count` prompts of `length` ids drawn uniformly from [low, high), seeded:
// the same seed gives the same prompts on every machine (std::mt19937_64 is
// specified by the standard; the distribution is done by hand for that).
std::vector<std::vector<int32_t>> make_prompts(int count, int length, int32_t low, int32_t high,
                                               uint64_t seed);

// Send offsets in seconds for a Poisson process of `rate` per second:
// exponential gaps, first request at 0.
std::vector<double> poisson_arrivals(int count, double rate, uint64_t seed);

}  // namespace ringbench
