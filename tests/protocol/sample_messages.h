// One or more filled-in instances of every wire message, for round trips,
// mutation corpora and fuzzer seeds.
#pragma once

#include <vector>

#include "ringserve/protocol/messages.h"

namespace ringserve::testing {

// Every alternative of protocol::Message appears at least once, with every
// field set to a non-default value somewhere.
std::vector<protocol::Message> sample_messages();

}  // namespace ringserve::testing
