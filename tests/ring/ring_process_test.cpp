// Two processes over a real memfd: the segment's fds cross a socketpair with
// SCM_RIGHTS, the child attaches and echoes every request back as an event.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "ring_fixture.h"
#include "ringserve/protocol/fd_passing.h"
#include "ringserve/protocol/shm_segment.h"

namespace ringserve::protocol {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kRecords = 200'000;
constexpr size_t kMaxSize = 400;
const WaitOptions kWait{20us, 30s};

// The child: the "server" end of the test. Returns its exit code.
int echo_child(int sock) {
  auto frame = recv_frame(sock, DecodeLimits{}, kSegmentFdCount, 10000ms);
  if (!frame || frame->fds.size() != kSegmentFdCount) return 10;
  auto seg = ShmSegment::attach(frame->fds);
  if (!seg) {
    std::fprintf(stderr, "child attach: %s\n", seg.error().to_string().c_str());
    return 11;
  }
  auto in = seg->request_reader();
  auto out = seg->event_writer();
  if (!in || !out) return 12;
  std::vector<uint8_t> buf;
  for (uint64_t i = 0; i < kRecords; ++i) {
    auto r = in->read(buf, kWait);
    if (!r) {
      std::fprintf(stderr, "child read %lu: %s\n", static_cast<unsigned long>(i),
                   r.error().to_string().c_str());
      return 13;
    }
    if (auto w = out->write(buf, kWait); !w) return 14;
  }
  return 0;
}

TEST(RingProcess, ManyRecordsEchoedThroughAForkedProcess) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd parent_sock(sv[0]), child_sock(sv[1]);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    parent_sock.reset();
    ::_exit(echo_child(child_sock.get()));
  }
  child_sock.reset();

  // The parent plays the client, but owns the segment here so the child has
  // to attach from received fds only.
  auto seg = ShmSegment::create(SegmentOptions{16 * 1024, 16 * 1024});
  ASSERT_TRUE(seg);
  const auto fds = seg->fds();
  ASSERT_TRUE(send_frame(parent_sock.get(), encode(HelloAck{}), fds, 1000ms));
  auto requests = seg->request_writer();
  auto events = seg->event_reader();
  ASSERT_TRUE(requests && events);

  std::thread producer([&] {
    for (uint64_t seq = 0; seq < kRecords; ++seq) {
      ASSERT_TRUE(requests->write(testing::make_record(seq, kMaxSize), kWait));
    }
  });
  std::vector<uint8_t> buf;
  for (uint64_t seq = 0; seq < kRecords; ++seq) {
    auto st = events->read(buf, kWait);
    ASSERT_TRUE(st) << "event " << seq << ": " << st.error().to_string();
    ASSERT_EQ(testing::check_record(buf, seq, kMaxSize), "");
  }
  producer.join();
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace ringserve::protocol
