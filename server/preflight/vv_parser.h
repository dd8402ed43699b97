// Reader for `lspci -vv` / `-vvv` text: the form people paste into bug
// reports and mails, often without any hex. It recovers the link, payload,
// read-request and ASPM values lspci printed, and the bridge bus numbers the
// upstream walk needs. Mail damage is tolerated: `> ` quoting, NBSP
// indentation, format=flowed and hard-wrapped lines (each device's text is
// read as one whitespace-collapsed string, so a field split across lines
// still parses).
#pragma once

#include <string_view>
#include <vector>

#include "preflight/port_view.h"
#include "ringserve/common/expected.h"

namespace ringserve::preflight {

struct VvFile {
  std::vector<PortView> devices;  // every device header found, in file order
  std::vector<std::string> notes;
};

// kNotFound when the text holds no device header; kTooLarge over kMaxDumpBytes.
Expected<VvFile> parse_lspci_vv(std::string_view text);

}  // namespace ringserve::preflight
