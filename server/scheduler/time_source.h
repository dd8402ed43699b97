// Where the scheduler reads the time. The engine thread asks it for every
// timestamp it records (arrival, admission, step start and end), so the
// batching rules and the timings can be driven by a virtual clock in tests.
// (`serve::Clock` in request.h is the std clock type; this is the source.)
#pragma once

#include "scheduler/request.h"

namespace ringserve::serve {

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual Clock::time_point now() const = 0;
};

class SteadyTimeSource final : public TimeSource {
 public:
  Clock::time_point now() const override { return Clock::now(); }
};

}  // namespace ringserve::serve
