#include "offload/auto_choice.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "offload/byte_size.h"

namespace ringserve::offload {

double predicted_step_seconds(const Plan& plan, const LinkMeasurement& m) {
  const double all = static_cast<double>(plan.layer_bytes) * plan.num_layers + plan.lm_head_bytes;
  const double streamed = static_cast<double>(plan.link_bytes_per_step(1));
  const double device = m.device_gbps > 0 ? m.device_gbps * 1e9 : 0.0;
  if (plan.strategy == Strategy::kStream) {
    const double copy = streamed / (m.h2d_gbps * 1e9);
    const double compute = device > 0 ? all / device : 0.0;
    return std::max(copy, compute);
  }
  const double resident = all - static_cast<double>(plan.streamed_bytes_per_step);
  return (device > 0 ? resident / device : 0.0) + streamed / (m.zerocopy_gbps * 1e9);
}

Expected<AutoDecision> decide_offload(const ModelFootprint& f, const PlanRequest& base,
                                      const LinkMeasurement& m) {
  auto finite_positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!finite_positive(m.h2d_gbps) || !finite_positive(m.zerocopy_gbps) ||
      !std::isfinite(m.device_gbps) || m.device_gbps < 0)
    return make_error(Errc::kInvalidArgument,
                      "offload auto: measured rates must be positive (h2d {} GB/s, zero-copy {} "
                      "GB/s, device {} GB/s)",
                      m.h2d_gbps, m.zerocopy_gbps, m.device_gbps);

  PlanRequest stream_req = base, zc_req = base;
  stream_req.strategy = Strategy::kStream;
  zc_req.strategy = Strategy::kZeroCopy;
  Expected<Plan> stream = make_plan(f, stream_req);
  Expected<Plan> zc = make_plan(f, zc_req);
  if (!zc) return with_context(zc.error(), "offload auto");

  AutoDecision d;
  d.zerocopy_step_s = predicted_step_seconds(*zc, m);
  d.stream_step_s = stream ? predicted_step_seconds(*stream, m) : -1.0;

  const bool nothing_streams = stream && stream->streamed_layers() == 0;
  const bool stream_wins = stream && (nothing_streams || d.stream_step_s <= d.zerocopy_step_s);
  d.strategy = stream_wins ? Strategy::kStream : Strategy::kZeroCopy;
  d.plan = stream_wins ? *stream : *zc;

  const std::string stream_text =
      stream ? fmt::format("stream {:.2f} ms ({} of {} layers over {:.1f} GB/s)",
                           d.stream_step_s * 1e3, stream->streamed_layers(), stream->num_layers,
                           m.h2d_gbps)
             : fmt::format("stream refused ({})", stream.error().message);
  d.reason = fmt::format(
      "offload auto -> {}: {}; zerocopy {:.2f} ms ({} of {} layers over {:.1f} GB/s){}",
      strategy_name(d.strategy), stream_text, d.zerocopy_step_s * 1e3, zc->streamed_layers(),
      zc->num_layers, m.zerocopy_gbps, nothing_streams ? "; nothing streams" : "");
  return d;
}

}  // namespace ringserve::offload
