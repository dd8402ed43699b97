#include <fmt/format.h>

#include "preflight/render.h"

namespace ringserve::preflight {
namespace {

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json finding_json(const Finding& f) {
  nlohmann::json j = {{"id", f.id},
                      {"severity", severity_name(f.severity)},
                      {"subject", f.subject},
                      {"evidence", f.evidence},
                      {"explanation", f.explanation},
                      {"action", f.action}};
  j["apply"] = f.apply_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.apply_id);
  return j;
}

}  // namespace

nlohmann::json port_json(const PortView& p) {
  nlohmann::json link = {{"speed_gts", opt(p.link.speed_gts)},
                         {"width", opt(p.link.width)},
                         {"cap_speed_gts", opt(p.link.cap_speed_gts)},
                         {"cap_width", opt(p.link.cap_width)},
                         {"target_speed_gts", opt(p.link.target_speed_gts)},
                         {"supported_speeds_gts", p.link.supported_speeds_gts},
                         {"equalization_complete", opt(p.link.equalization_complete)},
                         {"speed_downgraded", opt(p.link.speed_downgraded)},
                         {"width_downgraded", opt(p.link.width_downgraded)}};
  if (p.link.speed_gts && p.link.width) {
    link["theoretical_gbps"] = link_rate_gbps(*p.link.speed_gts, *p.link.width);
  }
  nlohmann::json j = {
      {"bdf", p.bdf},
      {"vendor_device", p.vendor_device()},
      {"description", p.description},
      {"port_type", p.port_type ? nlohmann::json(port_type_name(*p.port_type)) : nullptr},
      {"link", link},
      {"mps", opt(p.mps)},
      {"mps_cap", opt(p.mps_cap)},
      {"mrrs", opt(p.mrrs)},
      {"aspm", p.aspm ? nlohmann::json(aspm_name(*p.aspm)) : nullptr},
      {"aspm_cap", p.aspm_cap ? nlohmann::json(aspm_name(*p.aspm_cap)) : nullptr},
      {"config_bytes", p.config_bytes_known},
      {"notes", p.notes}};
  if (p.aer_uncorrectable_status || p.aer_correctable_status) {
    j["aer"] = {{"uncorrectable_status", opt(p.aer_uncorrectable_status)},
                {"correctable_status", opt(p.aer_correctable_status)}};
  }
  return j;
}

nlohmann::json render_json(const Report& report) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : report.devices) {
    nlohmann::json j = port_json(d.gpu);
    j["upstream"] = d.upstream.empty() ? nlohmann::json(nullptr) : port_json(d.upstream.front());
    nlohmann::json path = nlohmann::json::array();
    for (const auto& p : d.upstream) path.push_back(port_json(p));
    j["upstream_path"] = path;
    j["environment"] = environment_name(d.environment);
    j["environment_reason"] = d.environment_reason;
    if (d.sysfs && d.sysfs->present) {
      const auto& s = *d.sysfs;
      nlohmann::json irqs = nlohmann::json::array();
      for (const auto& irq : d.irqs) {
        irqs.push_back({{"irq", irq.irq},
                        {"affinity", opt(irq.affinity_list)},
                        {"effective", opt(irq.effective_affinity_list)}});
      }
      j["sysfs"] = {{"current_link_speed", opt(s.current_link_speed_text)},
                    {"max_link_speed", opt(s.max_link_speed_text)},
                    {"numa_node", opt(s.numa_node)},
                    {"local_cpulist", opt(s.local_cpulist)},
                    {"power_control", opt(s.power_control)},
                    {"link_aspm_attributes", s.link_aspm},
                    {"iommu_group", s.iommu_group},
                    {"irqs", irqs}};
    }
    if (d.nvml) {
      j["nvml"] = {{"gen_current", opt(d.nvml->gen_current)},
                   {"width_current", opt(d.nvml->width_current)},
                   {"gen_max", opt(d.nvml->gen_max)},
                   {"width_max", opt(d.nvml->width_max)},
                   {"gpu_gen_max", opt(d.nvml->gpu_gen_max)},
                   {"replay_counter", opt(d.nvml->replay_counter)},
                   {"pstate", opt(d.nvml->pstate)}};
    }
    if (d.bandwidth) {
      const auto& b = *d.bandwidth;
      j["bandwidth"] = {{"device_name", b.device_name},
                        {"bytes", b.bytes},
                        {"iterations", b.iterations},
                        {"pinned_h2d_gbps", b.pinned_h2d_gbps},
                        {"pinned_d2h_gbps", b.pinned_d2h_gbps},
                        {"pageable_h2d_gbps", b.pageable_h2d_gbps},
                        {"pageable_d2h_gbps", b.pageable_d2h_gbps}};
    } else {
      j["bandwidth"] = nullptr;
    }
    if (d.under_load) {
      j["link_under_load"] = {{"speed_gts", opt(d.under_load->speed_gts)},
                              {"width", opt(d.under_load->width)}};
    }
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : d.findings) findings.push_back(finding_json(f));
    j["findings"] = findings;
    devices.push_back(j);
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings) findings.push_back(finding_json(f));
  return {{"schema_version", report.schema_version},
          {"tool", "ringserve preflight"},
          {"source", report.source},
          {"environment", environment_name(report.environment)},
          {"verdict", verdict(report)},
          {"worst", severity_name(report.worst())},
          {"exit_status", exit_status(report)},
          {"devices", devices},
          {"findings", findings},
          {"notes", report.notes}};
}

}  // namespace ringserve::preflight
