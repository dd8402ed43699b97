// Which path a read takes, and which the caller asks for.
#pragma once

namespace ringserve::io {

// O_DIRECT offsets, lengths and buffer addresses are multiples of this. 4096
// covers every logical block size in common use; a filesystem that needs
// more (statx STATX_DIOALIGN) is read through the page cache instead.
inline constexpr unsigned kDirectAlignment = 4096;

enum class Method {
  kIoUringDirect,    // io_uring, O_DIRECT: no page cache copy, several reads in flight
  kIoUringBuffered,  // io_uring through the page cache
  kPreadDirect,      // pread threads, O_DIRECT
  kPreadBuffered,    // pread threads through the page cache
};

enum class Backend { kAuto, kIoUring, kPread };
enum class DirectIo { kAuto, kOn, kOff };

const char* method_name(Method m);  // "io_uring+O_DIRECT", "pread (page cache)", ...
bool uses_io_uring(Method m);
bool uses_direct_io(Method m);
Method make_method(bool io_uring, bool direct);

const char* backend_name(Backend b);     // "auto", "io_uring", "pread"
const char* direct_io_name(DirectIo d);  // "auto", "on", "off"

}  // namespace ringserve::io
