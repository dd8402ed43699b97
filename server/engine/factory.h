// Builds the engine a configuration asks for. `auto` picks CUDA when this
// binary was built with it and a device is present, else the CPU reference.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "engine/engine_options.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::engine {

// Errors: kUnsupported ("built without CUDA", or no device for backend=cuda),
// kInvalidArgument (bad options), whatever the backend reports.
Expected<std::unique_ptr<Engine>> create_engine(const EngineOptions& options,
                                                model::ModelWeights weights);

// Whether `auto` would pick CUDA in this process.
bool cuda_available();

}  // namespace ringserve::engine

namespace ringserve::cuda {

// Implemented by rs_cuda (server/cuda/) in CUDA builds; the factory calls it
// only when RINGSERVE_HAVE_CUDA is defined on rs_engine.
Expected<std::unique_ptr<engine::Engine>> create_cuda_engine(const engine::EngineOptions& options,
                                                             model::ModelWeights weights);

}  // namespace ringserve::cuda
