#include "preflight/vv_parser.h"

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "preflight/dump_parser.h"

namespace ringserve::preflight {
namespace {

struct Block {
  std::string bdf;
  std::string header;  // the header line after the address
  std::string body;    // all following lines, whitespace collapsed
};

// NBSP (U+00A0 as UTF-8) and tabs become spaces; runs of spaces collapse.
void append_collapsed(std::string& out, std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (static_cast<unsigned char>(c) == 0xc2 && i + 1 < line.size() &&
        static_cast<unsigned char>(line[i + 1]) == 0xa0) {
      c = ' ';
      ++i;
    }
    if (c == '\t' || c == '\r') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  if (!out.empty() && out.back() != ' ') out += ' ';
}

std::string_view after(std::string_view s, std::string_view key) {
  size_t pos = s.find(key);
  if (pos == std::string_view::npos) return {};
  return s.substr(pos + key.size());
}

// The text of one register's decode: from "Key:" up to the next "Xxx:" key
// that starts a register line (LnkCap, LnkCtl, ...). Bounded so a field of
// the next register is never taken for this one's.
std::string_view register_text(std::string_view body, std::string_view key) {
  std::string_view rest = after(body, key);
  if (rest.empty()) return {};
  static constexpr std::string_view kNext[] = {
      "DevCap:",  "DevCtl:",  "DevSta:",       "LnkCap:",       "LnkCtl:",
      "LnkSta:",  "SltCap:",  "SltCtl:",       "SltSta:",       "RootCap:",
      "RootCtl:", "RootSta:", "DevCap2:",      "DevCtl2:",      "LnkCap2:",
      "LnkCtl2:", "LnkSta2:", "Capabilities:", "Kernel driver", "Kernel modules"};
  size_t end = rest.size();
  for (auto next : kNext) {
    size_t pos = rest.find(next);
    if (pos != std::string_view::npos && pos < end) end = pos;
  }
  return rest.substr(0, end);
}

std::optional<double> parse_speed(std::string_view text) {
  // "8GT/s", "2.5GT/s", "16.0 GT/s"
  std::string s(text.substr(0, 16));
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v <= 0 || v > 1000) return std::nullopt;
  std::string_view unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.substr(0, 4) != "GT/s") return std::nullopt;
  return v;
}

std::optional<int> parse_int_after(std::string_view text, std::string_view key, int base = 10) {
  std::string_view rest = after(text, key);
  if (rest.empty()) return std::nullopt;
  std::string s(rest.substr(0, 12));
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, base);
  if (end == s.c_str() || v < 0 || v > 1 << 20) return std::nullopt;
  return static_cast<int>(v);
}

std::optional<Aspm> parse_aspm_words(std::string_view text) {
  // "L0s L1", "L1", "L0s", "not supported", "Disabled"
  if (text.substr(0, 13) == "not supported" || text.substr(0, 8) == "Disabled") return Aspm{};
  Aspm aspm;
  bool any = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find_first_of(" ,;", pos);
    std::string_view word = text.substr(pos, end == std::string_view::npos ? end : end - pos);
    if (word == "L0s") {
      aspm.l0s = any = true;
    } else if (word == "L1") {
      aspm.l1 = any = true;
    } else if (!word.empty()) {
      break;
    }
    if (end == std::string_view::npos || text[end] != ' ') break;
    pos = end + 1;
  }
  if (!any) return std::nullopt;
  return aspm;
}

std::optional<bool> parse_flag(std::string_view text) {
  // " (downgraded)", " (ok)", " (overdriven)"; lspci >= 3.10 prints nothing when equal
  if (text.substr(0, 13) == " (downgraded)") return true;
  if (text.substr(0, 5) == " (ok)" || text.substr(0, 13) == " (overdriven)") return false;
  return std::nullopt;
}

int port_type_from_text(std::string_view t) {
  static constexpr std::pair<std::string_view, PortType> kTypes[] = {
      {"Legacy Endpoint", PortType::kLegacyEndpoint},
      {"Root Complex Integrated Endpoint", PortType::kRootComplexEndpoint},
      {"Root Complex Event Collector", PortType::kRootComplexEventCollector},
      {"Root Port", PortType::kRootPort},
      {"Upstream Port", PortType::kSwitchUpstream},
      {"Downstream Port", PortType::kSwitchDownstream},
      {"PCI-Express to PCI/PCI-X Bridge", PortType::kPcieToPciBridge},
      {"PCI/PCI-X to PCI-Express Bridge", PortType::kPciToPcieBridge},
      {"Endpoint", PortType::kEndpoint},
  };
  for (const auto& [name, type] : kTypes) {
    if (t.substr(0, name.size()) == name) return static_cast<int>(type);
  }
  return -1;
}

void parse_header(std::string_view header, PortView& view) {
  view.description = std::string(header);
  // `lspci -nn`: "... [0302]: NVIDIA Corporation GH100 [10de:2335]"
  for (size_t pos = header.find('['); pos != std::string_view::npos;
       pos = header.find('[', pos + 1)) {
    std::string_view inner = header.substr(pos + 1);
    unsigned a = 0, b = 0;
    if (inner.size() >= 10 && inner[4] == ':' && inner[9] == ']' &&
        std::sscanf(std::string(inner.substr(0, 9)).c_str(), "%4x:%4x", &a, &b) == 2) {
      view.vendor = static_cast<uint16_t>(a);
      view.device = static_cast<uint16_t>(b);
    } else if (inner.size() >= 6 && inner[4] == ']' && !view.class_code &&
               std::sscanf(std::string(inner.substr(0, 4)).c_str(), "%4x", &a) == 1) {
      view.class_code = a << 8;
    }
  }
  if (!view.class_code) {
    static constexpr std::pair<std::string_view, uint32_t> kClasses[] = {
        {"VGA compatible controller:", 0x030000},
        {"3D controller:", 0x030200},
        {"Display controller:", 0x038000},
        {"PCI bridge:", 0x060400},
        {"Host bridge:", 0x060000},
    };
    for (const auto& [name, code] : kClasses) {
      if (header.find(name) != std::string_view::npos) view.class_code = code;
    }
  }
  if (!view.vendor && header.find("NVIDIA Corporation") != std::string_view::npos) {
    view.vendor = 0x10de;
  }
}

PortView parse_block(const Block& block) {
  PortView view;
  view.bdf = block.bdf;
  parse_header(block.header, view);
  std::string_view body = block.body;

  if (auto bus = after(body, "Bus: primary="); !bus.empty()) {
    view.is_bridge = true;
    if (auto sec = parse_int_after(bus, "secondary=", 16)) view.secondary_bus = *sec;
    if (auto sub = parse_int_after(bus, "subordinate=", 16)) view.subordinate_bus = *sub;
  }
  if (body.find("<access denied>") != std::string_view::npos) {
    view.notes.push_back("capabilities were not readable when the text was captured");
  }
  if (auto msi = after(body, "MSI: Enable"); !msi.empty()) view.msi_enabled = msi.front() == '+';
  if (auto msix = after(body, "MSI-X: Enable"); !msix.empty()) {
    view.msix_enabled = msix.front() == '+';
  }

  std::string_view express = after(body, "Express (v");
  if (express.empty()) return view;
  view.has_pcie = true;
  if (auto v = parse_int_after(express, "")) view.pcie_version = *v;
  if (auto close = express.find(") "); close != std::string_view::npos && close < 4) {
    int type = port_type_from_text(express.substr(close + 2));
    if (type >= 0) view.port_type = type;
  }
  view.has_link = view.port_type != static_cast<int>(PortType::kRootComplexEndpoint) &&
                  view.port_type != static_cast<int>(PortType::kRootComplexEventCollector);

  if (auto devcap = register_text(body, "DevCap:"); !devcap.empty()) {
    view.mps_cap = parse_int_after(devcap, "MaxPayload ");
  }
  if (auto devctl = register_text(body, "DevCtl:"); !devctl.empty()) {
    view.mps = parse_int_after(devctl, "MaxPayload ");
    view.mrrs = parse_int_after(devctl, "MaxReadReq ");
  }
  if (!view.has_link) return view;
  LinkValues& link = view.link;
  if (auto lnkcap = register_text(body, "LnkCap:"); !lnkcap.empty()) {
    if (auto s = after(lnkcap, "Speed "); !s.empty()) link.cap_speed_gts = parse_speed(s);
    link.cap_width = parse_int_after(lnkcap, "Width x");
    if (auto a = after(lnkcap, "ASPM "); !a.empty()) view.aspm_cap = parse_aspm_words(a);
  }
  if (auto lnkctl = register_text(body, "LnkCtl:"); !lnkctl.empty()) {
    if (auto a = after(lnkctl, "ASPM "); !a.empty()) view.aspm = parse_aspm_words(a);
  }
  if (auto lnksta = register_text(body, "LnkSta:"); !lnksta.empty()) {
    if (auto s = after(lnksta, "Speed "); !s.empty()) {
      link.speed_gts = parse_speed(s);
      // The flag follows the speed token, also when the speed is "unknown".
      const size_t token_end = s.find_first_of(" ,");
      if (token_end != std::string_view::npos) {
        link.speed_downgraded = parse_flag(s.substr(token_end));
      }
    }
    if (auto w = after(lnksta, "Width x"); !w.empty()) {
      link.width = parse_int_after(lnksta, "Width x");
      size_t digits = w.find_first_not_of("0123456789");
      if (digits != std::string_view::npos) link.width_downgraded = parse_flag(w.substr(digits));
    }
  }
  if (auto lnkctl2 = register_text(body, "LnkCtl2:"); !lnkctl2.empty()) {
    if (auto s = after(lnkctl2, "Target Link Speed: "); !s.empty()) {
      link.target_speed_gts = parse_speed(s);
    }
  }
  // lspci >= 3.10 no longer prints "(ok)": equal to LnkCap means not downgraded.
  if (!view.is_downstream_facing() && link.speed_gts && link.cap_speed_gts &&
      !link.speed_downgraded) {
    link.speed_downgraded = *link.speed_gts < *link.cap_speed_gts;
  }
  if (!view.is_downstream_facing() && link.width && link.cap_width && !link.width_downgraded) {
    link.width_downgraded = *link.width < *link.cap_width;
  }
  return view;
}

}  // namespace

Expected<VvFile> parse_lspci_vv(std::string_view text) {
  if (text.size() > kMaxDumpBytes) {
    return make_error(Errc::kTooLarge, "text is {} bytes, more than the {} accepted", text.size(),
                      kMaxDumpBytes);
  }
  std::vector<Block> blocks;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = strip_quoting(text.substr(start, end - start));
    start = end + 1;
    size_t consumed = 0;
    std::string bdf = parse_bdf_prefix(line, &consumed);
    if (!bdf.empty()) {
      Block block;
      block.bdf = std::move(bdf);
      std::string_view rest = line.substr(consumed);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      block.header = std::string(rest.substr(0, 512));
      blocks.push_back(std::move(block));
      continue;
    }
    if (blocks.empty()) continue;
    // The header line of a device can itself be wrapped: its continuation
    // comes before the first indented line.
    Block& block = blocks.back();
    if (block.body.empty() && !line.empty() && line.front() != ' ' && line.front() != '\t' &&
        static_cast<unsigned char>(line.front()) != 0xc2 && block.header.size() < 512) {
      block.header += std::string(line.substr(0, 512));
      continue;
    }
    if (block.body.size() < (1u << 20)) append_collapsed(block.body, line);
  }
  if (blocks.empty()) {
    return make_error(Errc::kNotFound, "no device lines (\"bb:dd.f ...\") in the text");
  }
  // A file can hold the same address twice (a `-vv` block and an `lspci`
  // listing line): the block with the most text wins.
  VvFile out;
  std::vector<const Block*> chosen;
  for (const auto& block : blocks) {
    bool duplicate = false;
    for (auto& seen : chosen) {
      if (seen->bdf != block.bdf) continue;
      duplicate = true;
      if (block.body.size() > seen->body.size()) seen = &block;
    }
    if (duplicate) {
      out.notes.push_back(
          fmt::format("{} appears more than once; the longest block was used", block.bdf));
    } else {
      chosen.push_back(&block);
    }
  }
  for (const Block* block : chosen) out.devices.push_back(parse_block(*block));
  return out;
}

}  // namespace ringserve::preflight
