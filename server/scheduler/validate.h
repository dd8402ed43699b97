// Checks a request against the model and the scheduler's limits before it is
// queued, so a transport can answer a bad request at once with a clear Error.
#pragma once

#include "engine/engine.h"
#include "scheduler/options.h"
#include "scheduler/request.h"

namespace ringserve::serve {

// kInvalidArgument: empty prompt, ids outside the vocabulary, max_new_tokens
// < 1, empty or too many/too long stop strings, bad sampling values.
// kTooLarge: prompt + max_new_tokens above the model's context.
Status validate_request(const Request& request, const engine::EngineInfo& info,
                        const SchedulerOptions& options);

}  // namespace ringserve::serve
