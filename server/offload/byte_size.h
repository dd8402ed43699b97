// Byte quantities as people type them ("--gpu-memory 7.5GiB") and as logs
// print them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ringserve/common/expected.h"

namespace ringserve::offload {

// Parses "8GiB", "12 GiB", "7.5G", "8000MiB", "512k", "8589934592".
// Units are case-insensitive. A bare letter or an "iB" suffix is binary
// (K = 2^10 ... T = 2^40, as in docker --memory or java -Xmx); "KB", "MB",
// "GB", "TB" are decimal (10^3 ... 10^12), as their SI names say. Fractions
// are allowed with a unit and rounded down to a whole byte.
// Errors (kInvalidArgument, naming the text): empty, a sign, no digits, an
// exponent, an unknown unit, a fraction of a byte, more than 2^62 bytes.
Expected<uint64_t> parse_byte_size(std::string_view text);

// "2.33 GB", "512.0 MB", "7.0 kB", "12 B" (decimal, three significant-ish
// digits): the unit the bandwidth figures use, so GB / (GB/s) reads as s.
std::string format_bytes(uint64_t bytes);

}  // namespace ringserve::offload
