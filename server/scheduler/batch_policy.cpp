#include "scheduler/batch_policy.h"

namespace ringserve::serve {

AdmissionDecision decide_admission(const SchedulerOptions& options, const QueueView& queue,
                                   Clock::time_point now) {
  AdmissionDecision decision;
  if (queue.waiting == 0) return decision;
  const size_t max_batch = static_cast<size_t>(options.max_batch);
  if (queue.running >= max_batch) return decision;
  const size_t free_slots = max_batch - queue.running;
  const Clock::time_point window_closes = queue.oldest + options.batch_window;
  if (queue.waiting >= free_slots || now >= window_closes ||
      (options.policy == BatchPolicy::kAdaptive && queue.running == 0)) {
    decision.admit = true;
    return decision;
  }
  decision.wake_at = window_closes;
  return decision;
}

}  // namespace ringserve::serve
