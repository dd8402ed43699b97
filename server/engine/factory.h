// Builds the engine a configuration asks for. `auto` picks CUDA when this
// binary was built with it and a device is present, else the CPU reference.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/engine_options.h"
#include "model/loader.h"
#include "model/weights.h"
#include "ringserve/common/expected.h"

namespace ringserve::engine {

// Errors: kUnsupported ("built without CUDA", or no device for backend=cuda),
// kInvalidArgument (bad options), whatever the backend reports.
Expected<std::unique_ptr<Engine>> create_engine(const EngineOptions& options,
                                                model::ModelWeights weights);

// Loads `model_spec` (model/loader.h) and builds the engine on it. The CUDA
// backend reads a Hugging Face float checkpoint straight onto the GPU and
// quantizes it there (cuda::load_cuda_engine); the CPU engine gets
// model::load_model's weights. `load.stats` is filled for host-side loads.
Expected<std::unique_ptr<Engine>> load_engine(const EngineOptions& options,
                                              const std::string& model_spec,
                                              const model::LoadOptions& load);

// Whether `auto` would pick CUDA in this process.
bool cuda_available();

}  // namespace ringserve::engine

namespace ringserve::cuda {

// Implemented by rs_cuda (server/cuda/) in CUDA builds; the factory calls it
// only when RINGSERVE_HAVE_CUDA is defined on rs_engine.
Expected<std::unique_ptr<engine::Engine>> create_cuda_engine(const engine::EngineOptions& options,
                                                             model::ModelWeights weights);

}  // namespace ringserve::cuda
