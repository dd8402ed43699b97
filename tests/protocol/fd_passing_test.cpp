#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "ringserve/protocol/fd_passing.h"
#include "sample_messages.h"

namespace ringserve::protocol {
namespace {

using namespace std::chrono_literals;

class FdPassing : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a_.reset(sv[0]);
    b_.reset(sv[1]);
  }
  UniqueFd a_, b_;
};

TEST_F(FdPassing, FrameArrivesWithItsFds) {
  UniqueFd efd(::eventfd(0, EFD_CLOEXEC));
  ASSERT_TRUE(efd.valid());
  HelloAck ack;
  ack.server_name = "srv";
  ack.shm_granted = true;
  const Frame frame = encode(ack);
  const int fds[] = {efd.get(), efd.get()};
  ASSERT_TRUE(send_frame(a_.get(), frame, fds, 1000ms));

  auto got = recv_frame(b_.get(), DecodeLimits{}, 2, 1000ms);
  ASSERT_TRUE(got) << got.error().to_string();
  ASSERT_EQ(got->fds.size(), 2u);
  auto msg = decode_message(got->payload, DecodeLimits{});
  ASSERT_TRUE(msg);
  EXPECT_EQ(std::get<HelloAck>(*msg).server_name, "srv");
  // The received fd is the same eventfd, and close-on-exec.
  const uint64_t one = 1;
  ASSERT_EQ(::write(efd.get(), &one, 8), 8);
  uint64_t value = 0;
  ASSERT_EQ(::read(got->fds[0].get(), &value, 8), 8);
  EXPECT_EQ(value, 1u);
  EXPECT_NE(::fcntl(got->fds[1].get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST_F(FdPassing, FramesWithoutFdsStillWork) {
  for (const auto& m : testing::sample_messages()) {
    ASSERT_TRUE(send_frame(a_.get(), encode(m), {}, 1000ms));
    auto got = recv_frame(b_.get(), DecodeLimits{}, 0, 1000ms);
    ASSERT_TRUE(got) << got.error().to_string();
    EXPECT_TRUE(got->fds.empty());
    auto decoded = decode_message(got->payload, DecodeLimits{});
    ASSERT_TRUE(decoded);
    EXPECT_EQ(*decoded, m);
  }
}

TEST_F(FdPassing, TooManyFdsAreRejectedAndClosed) {
  UniqueFd efd(::eventfd(0, EFD_CLOEXEC));
  const int fds[] = {efd.get(), efd.get(), efd.get()};
  ASSERT_TRUE(send_frame(a_.get(), encode(Ping{1, 2}), fds, 1000ms));
  auto got = recv_frame(b_.get(), DecodeLimits{}, 2, 1000ms);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Errc::kProtocolError);
}

TEST_F(FdPassing, OversizedFrameIsRejectedFromItsHeader) {
  const uint32_t huge = 0x7fffffff;
  ASSERT_EQ(::write(a_.get(), &huge, 4), 4);
  auto got = recv_frame(b_.get(), DecodeLimits{}, 0, 1000ms);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Errc::kTooLarge);
}

TEST_F(FdPassing, PeerClosingMidFrameIsUnavailable) {
  const Frame frame = encode(Ping{1, 2});
  ASSERT_EQ(::write(a_.get(), frame.as_frame().data(), 6), 6);
  a_.reset();
  auto got = recv_frame(b_.get(), DecodeLimits{}, 0, 1000ms);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Errc::kUnavailable);
}

TEST_F(FdPassing, SilentPeerTimesOutOnANonBlockingSocket) {
  ASSERT_EQ(::fcntl(b_.get(), F_SETFL, O_NONBLOCK), 0);
  auto got = recv_frame(b_.get(), DecodeLimits{}, 0, 20ms);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Errc::kTimeout);
}

TEST_F(FdPassing, SendingToAClosedPeerIsUnavailableWithoutSigpipe) {
  b_.reset();
  auto st = send_frame(a_.get(), encode(Ping{1, 2}), {}, 1000ms);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::kUnavailable);
}

TEST_F(FdPassing, LargeFrameCrossesAFullSocketBuffer) {
  ASSERT_EQ(::fcntl(a_.get(), F_SETFL, O_NONBLOCK), 0);
  Stats big;
  big.batch_size_histogram.assign(100000, 7);  // ~800 KB: more than the socket buffer
  const Frame frame = encode(big);
  UniqueFd efd(::eventfd(0, EFD_CLOEXEC));
  const int fds[] = {efd.get()};
  std::thread sender([&] { EXPECT_TRUE(send_frame(a_.get(), frame, fds, 5000ms)); });
  auto got = recv_frame(b_.get(), DecodeLimits{}, 1, 5000ms);
  sender.join();
  ASSERT_TRUE(got) << got.error().to_string();
  EXPECT_EQ(got->fds.size(), 1u);
  auto decoded = decode_message(got->payload, DecodeLimits{});
  ASSERT_TRUE(decoded);
  EXPECT_EQ(std::get<Stats>(*decoded).batch_size_histogram.size(), 100000u);
}

TEST_F(FdPassing, InvalidArgumentsAreRejected) {
  std::vector<int> many(kMaxPassedFds + 1, 0);
  EXPECT_EQ(send_with_fds(a_.get(), std::vector<uint8_t>{1}, many, 10ms).error().code,
            Errc::kInvalidArgument);
  const int one[] = {0};
  EXPECT_EQ(send_with_fds(a_.get(), {}, one, 10ms).error().code, Errc::kInvalidArgument);
  EXPECT_EQ(send_frame(a_.get(), Frame{}, {}, 10ms).error().code, Errc::kInvalidArgument);
}

}  // namespace
}  // namespace ringserve::protocol
