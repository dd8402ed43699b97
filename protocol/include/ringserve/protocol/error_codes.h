// The one place where ringserve::Errc and wire::ErrorCode meet.
#pragma once

#include "ringserve/common/expected.h"
#include "ringserve/protocol/ringserve_generated.h"

namespace ringserve::protocol {

// kOk has no wire form (an Error message always reports a failure): it maps
// to Internal.
wire::ErrorCode to_wire(Errc code) noexcept;

// wire Unknown, and codes newer than this build, map to kInternal.
Errc from_wire(wire::ErrorCode code) noexcept;

}  // namespace ringserve::protocol
