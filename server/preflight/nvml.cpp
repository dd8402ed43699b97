#include "preflight/nvml.h"

#include <dlfcn.h>

#include <mutex>

namespace ringserve::preflight {
namespace {

// The few NVML entry points used, declared from the public API: all return
// nvmlReturn_t (0 = success) and take an opaque device handle.
using nvmlDevice_t = struct nvmlDevice_st*;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleByBusIdFn = int (*)(const char*, nvmlDevice_t*);
using UintFn = int (*)(nvmlDevice_t, unsigned*);
using PstateFn = int (*)(nvmlDevice_t, int*);

struct Api {
  void* lib = nullptr;
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  HandleByBusIdFn by_bus_id = nullptr;
  UintFn curr_gen = nullptr, curr_width = nullptr, max_gen = nullptr, max_width = nullptr;
  UintFn gpu_max_gen = nullptr, replays = nullptr;
  PstateFn pstate = nullptr;
};

template <class F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

const Api* load_api() {
  static Api api;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    api.init = sym<InitFn>(lib, "nvmlInit_v2");
    api.shutdown = sym<ShutdownFn>(lib, "nvmlShutdown");
    api.by_bus_id = sym<HandleByBusIdFn>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    api.curr_gen = sym<UintFn>(lib, "nvmlDeviceGetCurrPcieLinkGeneration");
    api.curr_width = sym<UintFn>(lib, "nvmlDeviceGetCurrPcieLinkWidth");
    api.max_gen = sym<UintFn>(lib, "nvmlDeviceGetMaxPcieLinkGeneration");
    api.max_width = sym<UintFn>(lib, "nvmlDeviceGetMaxPcieLinkWidth");
    api.gpu_max_gen = sym<UintFn>(lib, "nvmlDeviceGetGpuMaxPcieLinkGeneration");
    api.replays = sym<UintFn>(lib, "nvmlDeviceGetPcieReplayCounter");
    api.pstate = sym<PstateFn>(lib, "nvmlDeviceGetPerformanceState");
    if (api.init && api.shutdown && api.by_bus_id) api.lib = lib;
  });
  return api.lib ? &api : nullptr;
}

std::optional<unsigned> get(UintFn fn, nvmlDevice_t dev) {
  unsigned v = 0;
  if (!fn || fn(dev, &v) != 0) return std::nullopt;
  return v;
}

}  // namespace

Expected<NvmlLink> nvml_query_link(const std::string& bdf) {
  const Api* api = load_api();
  if (!api) return make_error(Errc::kUnavailable, "libnvidia-ml.so.1 not found");
  if (int rc = api->init(); rc != 0) {
    return make_error(Errc::kUnavailable, "nvmlInit failed (NVML error {})", rc);
  }
  nvmlDevice_t dev = nullptr;
  if (int rc = api->by_bus_id(bdf.c_str(), &dev); rc != 0) {
    api->shutdown();
    return make_error(Errc::kNotFound, "NVML does not know {} (NVML error {})", bdf, rc);
  }
  NvmlLink link;
  link.gen_current = get(api->curr_gen, dev);
  link.width_current = get(api->curr_width, dev);
  link.gen_max = get(api->max_gen, dev);
  link.width_max = get(api->max_width, dev);
  link.gpu_gen_max = get(api->gpu_max_gen, dev);
  link.replay_counter = get(api->replays, dev);
  int pstate = 0;
  if (api->pstate && api->pstate(dev, &pstate) == 0) link.pstate = pstate;
  api->shutdown();
  return link;
}

}  // namespace ringserve::preflight
