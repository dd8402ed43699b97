// Backpressure over both transports: a client that reads its events slowly,
// or not at all for a while, loses nothing and gets nothing corrupted or
// reordered, and the server's event loop never blocks on it (other clients
// are served meanwhile). The rings are made small so a few hundred events
// fill them; the socket's kernel buffers fill after a few thousand. Past
// --max-session-backlog-bytes a client that reads nothing has its requests
// ended with an error (after every token it was owed), or is disconnected.
#include <gmock/gmock.h>

#include <map>
#include <string>

#include "raw_peer.h"
#include "server_fixture.h"

namespace ringserve::testing {
namespace {

using ::testing::Eq;
using ::testing::Gt;
using ::testing::HasSubstr;

constexpr auto kTick = std::chrono::microseconds(100);

ipc::ServerOptions small_buffers(ipc::ServerOptions o) {
  o.max_frame_bytes = 4096;  // the event ring is at least twice this
  o.request_ring_bytes = 16 * 1024;
  o.event_ring_bytes = 16 * 1024;
  return o;
}

// Token i of the scripted reply is `first + i` (scripted_dispatcher.h).
protocol::GenerateRequest raw_request(uint64_t id, int32_t first, uint32_t tokens) {
  protocol::GenerateRequest r;
  r.request_id = id;
  r.prompt = protocol::PromptIds{{first, 11, 12}};
  r.sampling.max_new_tokens = tokens;
  return r;
}

template <class T>
class BackpressureTest : public ServerTest<T> {
 protected:
  // A well-behaved client on its own connection gets its requests served.
  void serve_a_fast_client(int requests, int32_t first) {
    auto fast = this->connect();
    ASSERT_TRUE(fast);
    for (int i = 0; i < requests; ++i) {
      const int32_t start = first + 100 * i;
      auto stream = fast->generate(this->ids_request(start, 40));
      ASSERT_TRUE(stream) << stream.error().to_string();
      int tokens = 0;
      EXPECT_THAT(this->drain(*stream, start, &tokens).reason, Eq(FinishReason::kLength));
      EXPECT_THAT(tokens, Eq(40));
    }
  }
};
TYPED_TEST_SUITE(BackpressureTest, Transports, TransportName);

TYPED_TEST(BackpressureTest, ASlowReaderGetsEveryTokenInOrderAndOthersAreNotHeldUp) {
  this->start_server(small_buffers(this->server_options()), kTick);
  auto slow = RawPeer::connect(this->socket_path());
  ASSERT_TRUE(slow) << slow.error().to_string();
  auto ack = slow->handshake(this->kShm);
  ASSERT_TRUE(ack) << ack.error().to_string();
  ASSERT_THAT(ack->shm_granted, Eq(this->kShm));

  constexpr uint64_t kSlowRequests = 3;
  constexpr uint32_t kTokens = 3000;  // 9000 events: far beyond the ring and socket buffers
  auto first_of = [](uint64_t id) { return static_cast<int32_t>(id * 100000); };
  for (uint64_t id = 1; id <= kSlowRequests; ++id) {
    ASSERT_TRUE(slow->send(protocol::encode(raw_request(id, first_of(id), kTokens))));
  }

  // The slow client reads nothing while another one is served, both while
  // its requests are generating and after all their events are queued.
  this->serve_a_fast_client(5, 7000);
  ASSERT_TRUE(
      wait_until([&] { return this->dispatcher_->active() == 0; }, std::chrono::seconds(60)));
  this->serve_a_fast_client(2, 9000);

  // Now it reads everything, pausing now and then.
  std::map<uint64_t, uint32_t> seen;
  std::map<uint64_t, protocol::Done> done;
  for (int events = 1; done.size() < kSlowRequests; ++events) {
    auto message = slow->receive_event();
    ASSERT_TRUE(message) << message.error().to_string();
    if (auto* tokens = std::get_if<protocol::TokenEvent>(&*message)) {
      const uint64_t id = tokens->request_id;
      ASSERT_TRUE(id >= 1 && id <= kSlowRequests) << "event for unknown request " << id;
      ASSERT_FALSE(done.count(id)) << "request " << id << ": tokens after its Done";
      std::string text;
      for (int32_t token : tokens->token_ids) {
        ASSERT_THAT(token, Eq(first_of(id) + static_cast<int32_t>(seen[id])))
            << "request " << id << ": token lost, repeated or reordered";
        ++seen[id];
        text += std::to_string(token) + " ";
      }
      EXPECT_THAT(tokens->text, Eq(text)) << "request " << id;
    } else if (auto* finished = std::get_if<protocol::Done>(&*message)) {
      ASSERT_TRUE(done.emplace(finished->request_id, *finished).second)
          << "two Dones for request " << finished->request_id;
    } else {
      FAIL() << "unexpected " << protocol::message_name(*message);
    }
    if (events % 200 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (uint64_t id = 1; id <= kSlowRequests; ++id) {
    EXPECT_THAT(seen[id], Eq(kTokens)) << "request " << id;
    EXPECT_THAT(done[id].reason, Eq(protocol::FinishReason::kLength)) << "request " << id;
    EXPECT_THAT(done[id].completion_tokens, Eq(kTokens)) << "request " << id;
  }
}

// A client that stops reading and then vanishes with a backlog queued for
// it: the server notices (its pending write fails or the socket reads EOF),
// cancels its request and drops the backlog, and serves others.
TYPED_TEST(BackpressureTest, AStalledClientThatDisconnectsWithABacklogIsCleanedUp) {
  this->start_server(small_buffers(this->server_options()), kTick);
  {
    auto stalled = RawPeer::connect(this->socket_path());
    ASSERT_TRUE(stalled) << stalled.error().to_string();
    ASSERT_TRUE(stalled->handshake(this->kShm));
    ASSERT_TRUE(stalled->send(protocol::encode(raw_request(1, 1, 100'000'000))));
    // Enough events to fill its ring or socket buffers several times over.
    ASSERT_TRUE(
        wait_until([&] { return this->dispatcher_->stats().completion_tokens_total >= 6000; },
                   std::chrono::seconds(60)));
  }
  EXPECT_TRUE(wait_until([&] { return this->dispatcher_->active() == 0; }));
  EXPECT_THAT(this->dispatcher_->cancels_seen(), Eq(1u));
  this->serve_a_fast_client(2, 5000);
}

// Past the backlog limit, a client that reads nothing has its requests
// cancelled (their KV freed while it still reads nothing), and once it reads
// again it gets every token it was owed, in order, then one Error per
// request. Others are served throughout; the session stays usable.
TYPED_TEST(BackpressureTest, AStalledClientPastTheBacklogLimitHasItsRequestsEndedWithAnError) {
  ipc::ServerOptions options = small_buffers(this->server_options());
  options.max_session_backlog_bytes = 32 * 1024;
  this->start_server(options, kTick);
  auto stalled = RawPeer::connect(this->socket_path());
  ASSERT_TRUE(stalled) << stalled.error().to_string();
  auto ack = stalled->handshake(this->kShm);
  ASSERT_TRUE(ack) << ack.error().to_string();
  ASSERT_THAT(ack->shm_granted, Eq(this->kShm));

  constexpr uint64_t kRequests = 3;
  constexpr uint32_t kEndless = 100'000'000;
  auto first_of = [](uint64_t id) { return static_cast<int32_t>(id * 1'000'000); };
  for (uint64_t id = 1; id <= kRequests; ++id) {
    ASSERT_TRUE(stalled->send(protocol::encode(raw_request(id, first_of(id), kEndless))));
  }
  ASSERT_TRUE(wait_until([&] { return this->dispatcher_->cancels_seen() >= kRequests; },
                         std::chrono::seconds(60)));
  ASSERT_TRUE(wait_until([&] { return this->dispatcher_->active() == 0; }));
  EXPECT_THAT(this->dispatcher_->cancels_seen(), Eq(kRequests));
  EXPECT_THAT(this->dispatcher_->kv_blocks_peak(), Gt(0));

  this->serve_a_fast_client(3, 7000);
  {
    auto other = this->connect();
    ASSERT_TRUE(other);
    auto stats = other->stats();
    ASSERT_TRUE(stats) << stats.error().to_string();
    EXPECT_THAT(stats->requests_active, Eq(0u));
    EXPECT_THAT(stats->kv_blocks_used, Eq(0u)) << "the stalled client's KV was not freed";
    EXPECT_THAT(stats->kv_blocks_total, Gt(0u));
  }

  std::map<uint64_t, uint32_t> seen;
  std::map<uint64_t, protocol::ErrorMessage> ended;
  while (ended.size() < kRequests) {
    auto message = stalled->receive_event();
    ASSERT_TRUE(message) << message.error().to_string();
    if (auto* tokens = std::get_if<protocol::TokenEvent>(&*message)) {
      const uint64_t id = tokens->request_id;
      ASSERT_TRUE(id >= 1 && id <= kRequests) << "event for unknown request " << id;
      ASSERT_FALSE(ended.count(id)) << "request " << id << ": tokens after its Error";
      for (int32_t token : tokens->token_ids) {
        ASSERT_THAT(token, Eq(first_of(id) + static_cast<int32_t>(seen[id])))
            << "request " << id << ": token lost, repeated or reordered";
        ++seen[id];
      }
    } else if (auto* error = std::get_if<protocol::ErrorMessage>(&*message)) {
      ASSERT_TRUE(ended.emplace(error->request_id, *error).second)
          << "two Errors for request " << error->request_id;
    } else {
      FAIL() << "unexpected " << protocol::message_name(*message);
    }
  }
  for (uint64_t id = 1; id <= kRequests; ++id) {
    EXPECT_THAT(seen[id], Gt(0u)) << "request " << id;
    EXPECT_THAT(ended[id].code, Eq(Errc::kResourceExhausted)) << "request " << id;
    EXPECT_THAT(ended[id].message, HasSubstr("not reading its events")) << "request " << id;
    EXPECT_THAT(ended[id].message, HasSubstr("bytes were pending")) << "request " << id;
  }

  // Reading again, the same session is served.
  constexpr uint32_t kTokens = 50;
  ASSERT_TRUE(stalled->send(protocol::encode(raw_request(10, 5000, kTokens))));
  uint32_t tokens_seen = 0;
  for (;;) {
    auto message = stalled->receive_event();
    ASSERT_TRUE(message) << message.error().to_string();
    if (auto* tokens = std::get_if<protocol::TokenEvent>(&*message)) {
      ASSERT_THAT(tokens->request_id, Eq(10u));
      tokens_seen += static_cast<uint32_t>(tokens->token_ids.size());
      continue;
    }
    auto* done = std::get_if<protocol::Done>(&*message);
    ASSERT_TRUE(done) << "unexpected " << protocol::message_name(*message);
    EXPECT_THAT(done->reason, Eq(protocol::FinishReason::kLength));
    break;
  }
  EXPECT_THAT(tokens_seen, Eq(kTokens));
}

// With so many requests that even their Errors would take the backlog past
// twice the limit, the stalled client is disconnected instead; its requests
// are cancelled and others are served.
TYPED_TEST(BackpressureTest, AStalledClientWhoseErrorsCannotBeQueuedIsDisconnected) {
  ipc::ServerOptions options = small_buffers(this->server_options());
  options.max_session_backlog_bytes = 2 * options.max_frame_bytes;  // the least allowed
  options.max_inflight_per_session = 256;
  // A slow tick, so most requests are read before the backlog builds up
  // (past the limit the server stops reading this client's requests).
  this->start_server(options, std::chrono::milliseconds(5));
  auto stalled = RawPeer::connect(this->socket_path());
  ASSERT_TRUE(stalled) << stalled.error().to_string();
  ASSERT_TRUE(stalled->handshake(this->kShm));

  // Each Error is over 100 bytes: 64 of them are more than the limit.
  constexpr uint64_t kRequests = 256;
  for (uint64_t id = 1; id <= kRequests; ++id) {
    ASSERT_TRUE(stalled->send(protocol::encode(raw_request(id, 1, 100'000'000))));
  }
  EXPECT_TRUE(stalled->wait_for_eof(std::chrono::seconds(60)));
  EXPECT_TRUE(wait_until([&] { return this->dispatcher_->active() == 0; }));
  const uint64_t submitted = this->dispatcher_->stats().requests_total;
  EXPECT_THAT(submitted, Gt(64u));
  EXPECT_THAT(this->dispatcher_->cancels_seen(), Eq(submitted));
  this->serve_a_fast_client(2, 5000);
}

TEST(ServerOptionsTest, TheBacklogLimitMustHoldTwoFramesOfTheLargestSize) {
  ipc::ServerOptions options;
  options.max_frame_bytes = 1u << 20;
  options.max_session_backlog_bytes = 2u << 20;
  EXPECT_TRUE(ipc::validate(options));
  options.max_session_backlog_bytes = (2u << 20) - 1;
  auto status = ipc::validate(options);
  ASSERT_FALSE(status);
  EXPECT_THAT(status.error().code, Eq(Errc::kInvalidArgument));
  EXPECT_THAT(status.error().message, HasSubstr("--max-session-backlog-bytes"));
}

}  // namespace
}  // namespace ringserve::testing
