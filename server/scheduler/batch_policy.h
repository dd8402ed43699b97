// When the waiting requests start: the batch-formation rule, as a pure
// function of the queue and the clock so it can be tested on its own.
#pragma once

#include <cstddef>
#include <optional>

#include "scheduler/options.h"
#include "scheduler/request.h"

namespace ringserve::serve {

struct QueueView {
  size_t waiting = 0;          // requests in the queue, FIFO
  Clock::time_point oldest{};  // arrival of the head of the queue
  size_t running = 0;          // sequences in the engine
};

struct AdmissionDecision {
  bool admit = false;  // start admitting from the head of the queue now
  // Not admitting, but the window of the oldest request closes then: the
  // engine thread must wake up by this time even if nothing else happens.
  std::optional<Clock::time_point> wake_at;
};

// The window rule, generalised to continuous batching: requests start when
// enough wait to fill every free slot (all of max_batch when nothing runs,
// the card's "max-batch requests wait"), or when the oldest has waited the
// window. Adaptive also starts at once when the engine is idle. With no free
// slot nothing starts; a slot frees at a step boundary, which re-evaluates.
AdmissionDecision decide_admission(const SchedulerOptions& options, const QueueView& queue,
                                   Clock::time_point now);

}  // namespace ringserve::serve
