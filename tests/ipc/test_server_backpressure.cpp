// Backpressure over both transports: a client that reads its events slowly,
// or not at all for a while, loses nothing and gets nothing corrupted or
// reordered, and the server's event loop never blocks on it (other clients
// are served meanwhile). The rings are made small so a few hundred events
// fill them; the socket's kernel buffers fill after a few thousand.
#include <gmock/gmock.h>

#include <map>
#include <string>

#include "raw_peer.h"
#include "server_fixture.h"

namespace ringserve::testing {
namespace {

using ::testing::Eq;

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

}  // namespace
}  // namespace ringserve::testing
