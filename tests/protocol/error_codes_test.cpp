#include <gtest/gtest.h>

#include <set>

#include "ringserve/protocol/error_codes.h"

namespace ringserve::protocol {
namespace {

TEST(ErrorCodes, EveryErrcSurvivesTheWire) {
  std::set<wire::ErrorCode> seen;
  for (int i = static_cast<int>(Errc::kInvalidArgument); i <= static_cast<int>(Errc::kInternal);
       ++i) {
    const auto code = static_cast<Errc>(i);
    SCOPED_TRACE(errc_name(code));
    const auto w = to_wire(code);
    EXPECT_NE(w, wire::ErrorCode::Unknown);
    EXPECT_EQ(from_wire(w), code);
    seen.insert(w);
  }
  // Distinct codes stay distinct on the wire.
  EXPECT_EQ(seen.size(), static_cast<size_t>(Errc::kInternal));
}

TEST(ErrorCodes, EveryWireCodeHasAMeaning) {
  for (auto w : wire::EnumValuesErrorCode()) {
    SCOPED_TRACE(wire::EnumNameErrorCode(w));
    const Errc e = from_wire(w);
    EXPECT_NE(e, Errc::kOk);
    if (w != wire::ErrorCode::Unknown) {
      EXPECT_EQ(to_wire(e), w);
    }
  }
}

TEST(ErrorCodes, UnknownAndFutureCodesAreInternal) {
  EXPECT_EQ(from_wire(wire::ErrorCode::Unknown), Errc::kInternal);
  EXPECT_EQ(from_wire(static_cast<wire::ErrorCode>(999)), Errc::kInternal);
  EXPECT_EQ(to_wire(Errc::kOk), wire::ErrorCode::Internal);
}

}  // namespace
}  // namespace ringserve::protocol
