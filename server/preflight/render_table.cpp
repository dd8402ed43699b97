#include <fmt/format.h>

#include "preflight/render.h"

namespace ringserve::preflight {
namespace {

const char* color_of(Severity s) {
  switch (s) {
    case Severity::kOk:
      return "\033[32m";
    case Severity::kInfo:
      return "\033[36m";
    case Severity::kWarn:
      return "\033[33m";
    case Severity::kFail:
      return "\033[1;31m";
  }
  return "";
}

std::string tag(Severity s, bool color) {
  std::string name = fmt::format("{:<4}", severity_name(s));
  for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return color ? fmt::format("{}{}\033[0m", color_of(s), name) : name;
}

std::string or_q(const std::optional<int>& v) {
  return v ? std::to_string(*v) : "?";
}

std::string port_line(const PortView& p) {
  const auto& l = p.link;
  return fmt::format(
      "{:<13} {:<10} {:>7} x{:<3} {:>7} x{:<3} MPS {:>4}/{:<4} MRRS {:>4}  ASPM {}/{}", p.bdf,
      p.vendor_device().empty() ? "-" : p.vendor_device(),
      l.speed_gts ? speed_label(*l.speed_gts) : "?", or_q(l.width),
      l.cap_speed_gts ? speed_label(*l.cap_speed_gts) : "?", or_q(l.cap_width), or_q(p.mps),
      or_q(p.mps_cap), or_q(p.mrrs), p.aspm ? aspm_name(*p.aspm) : "?",
      p.aspm_cap ? aspm_name(*p.aspm_cap) : "?");
}

void findings_block(const std::vector<Finding>& findings, bool color, std::string& out) {
  for (const auto& f : findings) {
    out += fmt::format("  {} {:<22} {}\n", tag(f.severity, color), f.id, f.evidence);
    if (f.severity >= Severity::kInfo) {
      if (!f.explanation.empty()) out += fmt::format("       {:<22} why: {}\n", "", f.explanation);
      if (!f.action.empty()) out += fmt::format("       {:<22} do:  {}\n", "", f.action);
    }
  }
}

}  // namespace

std::string render_table(const Report& report, bool color) {
  std::string out = fmt::format("ringserve preflight ({}; {})\n", report.source,
                                environment_name(report.environment));
  out += fmt::format("  {:<13} {:<10} {:>7} {:<4} {:>7} {:<4} {:<13} {:<9}  {}\n", "device", "id",
                     "link", "", "cap", "", "MPS now/cap", "MRRS", "ASPM now/cap");
  for (const auto& d : report.devices) {
    out += "  " + port_line(d.gpu) + "\n";
    for (const auto& p : d.upstream) out += "   ^ " + port_line(p) + "\n";
    if (d.upstream.empty()) out += "   ^ (no upstream port visible)\n";
    if (d.bandwidth) {
      const auto& b = *d.bandwidth;
      out += fmt::format(
          "  bandwidth ({}, {} x {} MiB): pinned H2D {:.1f} GB/s, D2H {:.1f} GB/s; pageable "
          "H2D {:.1f}, D2H {:.1f}\n",
          b.device_name, b.iterations, b.bytes >> 20, b.pinned_h2d_gbps, b.pinned_d2h_gbps,
          b.pageable_h2d_gbps, b.pageable_d2h_gbps);
    }
    findings_block(d.findings, color, out);
  }
  if (!report.findings.empty()) {
    out += "  system\n";
    findings_block(report.findings, color, out);
  }
  for (const auto& note : report.notes) out += "  note: " + note + "\n";
  out += verdict(report) + "\n";
  return out;
}

}  // namespace ringserve::preflight
