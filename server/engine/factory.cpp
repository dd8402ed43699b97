#include "engine/factory.h"

#include "engine/cpu_engine.h"
#include "util/log.h"

#ifdef RINGSERVE_HAVE_CUDA
#include <cuda_runtime_api.h>
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

Expected<std::unique_ptr<Engine>> create_engine(const EngineOptions& options,
                                                model::ModelWeights weights) {
  Backend backend = options.backend;
  if (backend == Backend::kAuto) {
    backend = cuda_available() ? Backend::kCuda : Backend::kCpu;
    log::get("engine")->info("backend auto: using {}", backend_name(backend));
  }
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
