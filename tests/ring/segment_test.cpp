// The memfd segment: sizing, seals, header validation on attach, and the
// rings working across two independent mappings of the same file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "ringserve/protocol/shm_segment.h"

namespace ringserve::protocol {
namespace {

using namespace std::chrono_literals;

// What a client receives: its own copies of the fds.
std::vector<UniqueFd> dup_fds(const ShmSegment& segment) {
  std::vector<UniqueFd> out;
  for (int fd : segment.fds()) out.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  return out;
}

TEST(ShmSegment, CreateSealsAndSizesTheMemfd) {
  auto seg = ShmSegment::create(SegmentOptions{4096, 8192});
  ASSERT_TRUE(seg) << seg.error().to_string();
  const auto fds = seg->fds();
  EXPECT_EQ(fds.size(), static_cast<size_t>(kSegmentFdCount));
  const int seals = ::fcntl(fds[kSegmentMemfd], F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_NE(::ftruncate(fds[kSegmentMemfd], 4096), 0) << "a client must not shrink the segment";
  EXPECT_NE(::ftruncate(fds[kSegmentMemfd], 1 << 24), 0);
  EXPECT_NE(::fcntl(fds[kSegmentMemfd], F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_EQ(seg->request_ring_capacity(), 4096u);
  EXPECT_EQ(seg->event_ring_capacity(), 8192u);
  EXPECT_EQ(seg->size_bytes() % 4096, 0u);
  EXPECT_GE(seg->size_bytes(),
            kSegmentHeaderBytes + ring_region_bytes(4096) + ring_region_bytes(8192));
}

TEST(ShmSegment, RequestedSizesAreRoundedAndClamped) {
  SegmentOptions o;
  o.request_ring_bytes = 1000;  // -> 1024
  o.event_ring_bytes = 0;       // -> default
  auto seg = ShmSegment::create(o);
  ASSERT_TRUE(seg);
  EXPECT_EQ(seg->request_ring_capacity(), 1024u);
  EXPECT_EQ(seg->event_ring_capacity(), kDefaultRingBytes);
  o.request_ring_bytes = 0xffffffffu;  // -> the maximum
  o.event_ring_bytes = 1;              // -> the minimum
  o.max_ring_bytes = 1u << 16;
  seg = ShmSegment::create(o);
  ASSERT_TRUE(seg);
  EXPECT_EQ(seg->request_ring_capacity(), 1u << 16);
  EXPECT_EQ(seg->event_ring_capacity(), kRingMinCapacity);
}

TEST(ShmSegment, AttachedClientTalksToTheServerThroughBothRings) {
  auto server = ShmSegment::create(SegmentOptions{4096, 4096});
  ASSERT_TRUE(server);
  auto fds = dup_fds(*server);
  auto client = ShmSegment::attach(fds);
  ASSERT_TRUE(client) << client.error().to_string();
  EXPECT_EQ(client->size_bytes(), server->size_bytes());

  auto req_w = client->request_writer();
  auto req_r = server->request_reader();
  auto evt_w = server->event_writer();
  auto evt_r = client->event_reader();
  ASSERT_TRUE(req_w && req_r && evt_w && evt_r);
  const std::vector<uint8_t> ping{'p', 'i', 'n', 'g'}, pong{'p', 'o', 'n', 'g', '!'};
  std::vector<uint8_t> out;

  // The client's reader sleeps on the event data bell; the server's write rings it.
  EXPECT_FALSE(evt_r->prepare_wait());
  ASSERT_TRUE(req_w->write(ping, WaitOptions{0us, 1s}));
  ASSERT_TRUE(req_r->read(out, WaitOptions{0us, 1s}));
  EXPECT_EQ(out, ping);
  ASSERT_TRUE(*evt_w->try_write(pong));
  auto rung = client->event_data_bell().wait(1s);
  ASSERT_TRUE(rung && *rung) << "the server's write must ring the client's doorbell";
  evt_r->finish_wait();
  ASSERT_TRUE(*evt_r->try_read(out));
  EXPECT_EQ(out, pong);
}

TEST(ShmSegment, EndpointsOutliveTheirSegmentObject) {
  RingWriter writer;
  RingReader reader;
  {
    auto seg = ShmSegment::create(SegmentOptions{1024, 1024});
    ASSERT_TRUE(seg);
    writer = std::move(*seg->event_writer());
    reader = std::move(*seg->event_reader());
  }
  std::vector<uint8_t> out;
  ASSERT_TRUE(*writer.try_write(std::vector<uint8_t>{1, 2, 3}));
  ASSERT_TRUE(*reader.try_read(out));
  EXPECT_EQ(out.size(), 3u);
}

// Builds the fds of a hand-made segment: `bytes` as the memfd contents.
std::vector<UniqueFd> forged_segment(const std::vector<uint8_t>& bytes, bool seal = true) {
  std::vector<UniqueFd> fds;
  int fd = ::memfd_create("forged", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  if (seal) {
    EXPECT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  }
  fds.emplace_back(fd);
  for (int i = 0; i < 4; ++i) fds.emplace_back(::eventfd(0, EFD_CLOEXEC));
  return fds;
}

// A valid segment image to corrupt field by field.
std::vector<uint8_t> valid_image(SegmentHeader* header_out = nullptr) {
  SegmentHeader h{};
  h.magic = kSegmentMagic;
  h.version = kSegmentLayoutVersion;
  h.header_bytes = kSegmentHeaderBytes;
  h.request_ring_offset = 4096;
  h.request_ring_capacity = 1024;
  h.event_ring_offset = 8192;
  h.event_ring_capacity = 1024;
  h.total_bytes = 12288;
  std::vector<uint8_t> bytes(h.total_bytes, 0);
  std::memcpy(bytes.data(), &h, sizeof(h));
  if (header_out) *header_out = h;
  return bytes;
}

Errc attach_error(std::vector<UniqueFd> fds) {
  auto seg = ShmSegment::attach(fds);
  return seg ? Errc::kOk : seg.error().code;
}

std::vector<uint8_t> with_header(const SegmentHeader& h, size_t size) {
  std::vector<uint8_t> bytes(size, 0);
  std::memcpy(bytes.data(), &h, sizeof(h));
  return bytes;
}

TEST(ShmSegment, ForgedValidImageAttaches) {
  EXPECT_EQ(attach_error(forged_segment(valid_image())), Errc::kOk);
}

TEST(ShmSegment, AttachRejectsForgedHeaders) {
  SegmentHeader good{};
  valid_image(&good);
  struct Case {
    const char* what;
    void (*corrupt)(SegmentHeader&);
    Errc expected;
  };
  const Case cases[] = {
      {"magic", [](SegmentHeader& h) { h.magic ^= 1; }, Errc::kProtocolError},
      {"version", [](SegmentHeader& h) { h.version = 2; }, Errc::kVersionMismatch},
      {"header size", [](SegmentHeader& h) { h.header_bytes = 64; }, Errc::kProtocolError},
      {"total size", [](SegmentHeader& h) { h.total_bytes = 1u << 30; }, Errc::kProtocolError},
      {"capacity not pow2", [](SegmentHeader& h) { h.event_ring_capacity = 1000; },
       Errc::kProtocolError},
      {"ring past end", [](SegmentHeader& h) { h.event_ring_capacity = 1u << 20; },
       Errc::kProtocolError},
      {"offset overflow", [](SegmentHeader& h) { h.event_ring_offset = ~uint64_t{4095}; },
       Errc::kProtocolError},
      {"ring inside header", [](SegmentHeader& h) { h.request_ring_offset = 0; },
       Errc::kProtocolError},
      {"unaligned ring", [](SegmentHeader& h) { h.request_ring_offset = 4096 + 64; },
       Errc::kProtocolError},
      {"rings overlap", [](SegmentHeader& h) { h.event_ring_offset = h.request_ring_offset; },
       Errc::kProtocolError},
  };
  for (const auto& c : cases) {
    SegmentHeader h = good;
    c.corrupt(h);
    EXPECT_EQ(attach_error(forged_segment(with_header(h, good.total_bytes))), c.expected) << c.what;
  }
}

TEST(ShmSegment, AttachRejectsAnUnsealedMemfd) {
  EXPECT_EQ(attach_error(forged_segment(valid_image(), /*seal=*/false)), Errc::kProtocolError);
}

TEST(ShmSegment, AttachRejectsWrongFdsAndCounts) {
  auto fds = forged_segment(valid_image());
  fds.pop_back();
  EXPECT_EQ(attach_error(std::move(fds)), Errc::kProtocolError);

  fds = forged_segment(valid_image());
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  ::close(pipe_fds[1]);
  fds[kEventDataBell].reset(pipe_fds[0]);  // not an eventfd
  EXPECT_EQ(attach_error(std::move(fds)), Errc::kProtocolError);

  fds = forged_segment(valid_image());
  fds[kSegmentMemfd].reset(::eventfd(0, EFD_CLOEXEC));  // not a memfd
  EXPECT_NE(attach_error(std::move(fds)), Errc::kOk);

  fds = forged_segment(std::vector<uint8_t>(100, 0));  // smaller than a header
  EXPECT_EQ(attach_error(std::move(fds)), Errc::kProtocolError);
}

TEST(ShmSegment, AttachRejectsRingsWithImpossibleIndices) {
  auto image = valid_image();
  const uint64_t bogus_head = 1u << 20;
  std::memcpy(image.data() + 4096, &bogus_head, 8);  // request ring head
  auto fds = forged_segment(image);
  auto seg = ShmSegment::attach(fds);
  ASSERT_TRUE(seg);  // the header is fine...
  auto reader = seg->request_reader();
  ASSERT_FALSE(reader);  // ...the ring is not
  EXPECT_EQ(reader.error().code, Errc::kProtocolError);
}

}  // namespace
}  // namespace ringserve::protocol
