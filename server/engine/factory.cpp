#include "engine/factory.h"

#include "engine/cpu_engine.h"
#include "util/log.h"

#ifdef RINGSERVE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/cuda_engine.h"
#endif

namespace ringserve::engine {

Expected<Backend> parse_backend(std::string_view name) {
  if (name == "cpu") return Backend::kCpu;
  if (name == "cuda") return Backend::kCuda;
  if (name == "auto") return Backend::kAuto;
  return make_error(Errc::kInvalidArgument, "backend '{}': expected cpu, cuda or auto", name);
}

const char* backend_name(Backend backend) noexcept {
  switch (backend) {
    case Backend::kCpu:
      return "cpu";
    case Backend::kCuda:
      return "cuda";
    case Backend::kAuto:
      return "auto";
  }
  return "?";
}

bool cuda_available() {
#ifdef RINGSERVE_HAVE_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

namespace {

Expected<Backend> resolve_backend(const EngineOptions& options) {
  Backend backend = options.backend;
  if (backend == Backend::kAuto) {
    backend = cuda_available() ? Backend::kCuda : Backend::kCpu;
    log::get("engine")->info("backend auto: using {}", backend_name(backend));
  }
  if (backend == Backend::kCpu && options.gpu_memory_bytes > 0)
    return make_error(Errc::kInvalidArgument,
                      "--gpu-memory applies to the CUDA backend; this engine is the CPU one");
  return backend;
}

}  // namespace

Expected<std::unique_ptr<Engine>> load_engine(const EngineOptions& options,
                                              const std::string& model_spec,
                                              const model::LoadOptions& load) {
  const Backend backend = RS_TRY(resolve_backend(options));
#ifdef RINGSERVE_HAVE_CUDA
  if (backend == Backend::kCuda && cuda_available()) {
    EngineOptions resolved = options;
    resolved.backend = Backend::kCuda;
    return cuda::load_cuda_engine(resolved, model_spec, load);
  }
#endif
  model::ModelWeights weights = RS_TRY(model::load_model(model_spec, load));
  EngineOptions resolved = options;
  resolved.backend = backend;
  return create_engine(resolved, std::move(weights));
}

Expected<std::unique_ptr<Engine>> create_engine(const EngineOptions& options,
                                                model::ModelWeights weights) {
  const Backend backend = RS_TRY(resolve_backend(options));
  if (backend == Backend::kCuda) {
#ifdef RINGSERVE_HAVE_CUDA
    if (!cuda_available()) {
      return make_error(Errc::kUnsupported, "backend cuda: no CUDA device is visible");
    }
    return cuda::create_cuda_engine(options, std::move(weights));
#else
    return make_error(Errc::kUnsupported,
                      "backend cuda: this ringserve was built without CUDA (use --backend cpu)");
#endif
  }
  auto engine = CpuEngine::create(options, std::move(weights));
  if (!engine) return std::move(engine).error();
  return std::unique_ptr<Engine>(std::move(engine).value());
}

}  // namespace ringserve::engine
