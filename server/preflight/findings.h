// A finding is one judged fact: an id that scripts can match on, a
// severity, what was seen (evidence), why it matters (explanation) and what
// to do about it (action; may name an --apply action id).
#pragma once

#include <string>
#include <vector>

namespace ringserve::preflight {

enum class Severity : int { kOk = 0, kInfo = 1, kWarn = 2, kFail = 3 };

const char* severity_name(Severity s);  // "ok", "info", "warn", "fail"

struct Finding {
  std::string id;  // "pcie.link.speed", "irq.locality", ...
  Severity severity = Severity::kOk;
  std::string subject;  // a BDF, or "system"
  std::string evidence;
  std::string explanation;
  std::string action;    // empty when nothing is to be done
  std::string apply_id;  // "A1".."A4" when --apply can do it
};

Severity worst_severity(const std::vector<Finding>& findings);

}  // namespace ringserve::preflight
