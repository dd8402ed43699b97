// Requests and events over both transports: streaming, concurrency,
// cancellation, limits, and clients that break the protocol.
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include "raw_peer.h"
#include "server_fixture.h"

namespace ringserve::testing {
namespace {

using ::testing::HasSubstr;

template <class T>
using ServerTransportTest = ServerTest<T>;
TYPED_TEST_SUITE(ServerTransportTest, Transports, TransportName);

TYPED_TEST(ServerTransportTest, StreamsTokensThenDone) {
  this->start_server();
  auto client = this->connect();
  ASSERT_TRUE(client);
  EXPECT_EQ(client->server_info().model_name, "scripted-test-model");
  auto stream = client->generate(this->ids_request(100, 10));
  ASSERT_TRUE(stream) << stream.error().to_string();
  int tokens = 0;
  Done done = this->drain(*stream, 100, &tokens);
  EXPECT_EQ(tokens, 10);
  EXPECT_EQ(done.reason, FinishReason::kLength);
  EXPECT_EQ(done.completion_tokens, 10u);
  EXPECT_EQ(done.prompt_tokens, 3u);
  auto after = stream->next();
  ASSERT_TRUE(after);
  EXPECT_FALSE(*after) << "a finished stream yields nothing more";
}

TYPED_TEST(ServerTransportTest, CallbackFormDeliversEveryToken) {
  this->start_server();
  auto client = this->connect();
  ASSERT_TRUE(client);
  std::vector<int32_t> got;
  auto done = client->generate(this->ids_request(500, 25), [&](const TokenEvent& e) {
    got.insert(got.end(), e.token_ids.begin(), e.token_ids.end());
  });
  ASSERT_TRUE(done) << done.error().to_string();
  ASSERT_EQ(got.size(), 25u);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(got[i], 500 + i);
}

TYPED_TEST(ServerTransportTest, ManyConcurrentClientsGetTheirOwnEvents) {
  this->start_server();
  constexpr int kClients = 6, kThreadsPerClient = 3, kRequestsPerThread = 4, kTokens = 16;
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.push_back(this->connect());
    ASSERT_TRUE(clients.back());
  }
  std::atomic<int> completed{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    for (int t = 0; t < kThreadsPerClient; ++t) {
      threads.emplace_back([&, c, t] {
        for (int r = 0; r < kRequestsPerThread; ++r) {
          int32_t first = ((c * kThreadsPerClient + t) * kRequestsPerThread + r) * 1000;
          auto stream = clients[c]->generate(this->ids_request(first, kTokens));
          ASSERT_TRUE(stream) << stream.error().to_string();
          int tokens = 0;
          Done done = this->drain(*stream, first, &tokens);
          EXPECT_EQ(tokens, kTokens);
          EXPECT_EQ(done.reason, FinishReason::kLength);
          completed.fetch_add(1);
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(completed.load(), kClients * kThreadsPerClient * kRequestsPerThread);
  auto stats = clients[0]->stats();
  ASSERT_TRUE(stats) << stats.error().to_string();
  EXPECT_EQ(stats->requests_total,
            static_cast<uint64_t>(kClients * kThreadsPerClient * kRequestsPerThread));
  EXPECT_EQ(stats->sessions, static_cast<uint32_t>(kClients));
  EXPECT_EQ(stats->engine, "scripted");
}

TYPED_TEST(ServerTransportTest, CancelMidStreamEndsWithDoneCancelled) {
  this->start_server();
  auto client = this->connect();
  ASSERT_TRUE(client);
  auto endless = client->generate(this->ids_request(1, 1000000));
  auto other = client->generate(this->ids_request(7000, 30));
  ASSERT_TRUE(endless && other);
  for (int i = 0; i < 3; ++i) {
    auto event = endless->next();
    ASSERT_TRUE(event && *event);
    ASSERT_TRUE(std::holds_alternative<TokenEvent>(**event));
  }
  ASSERT_TRUE(endless->cancel());
  Done done = this->drain(*endless, 1 + 3);
  EXPECT_EQ(done.reason, FinishReason::kCancelled);
  EXPECT_GE(done.completion_tokens, 3u);
  // The other request on the same connection is untouched.
  int tokens = 0;
  EXPECT_EQ(this->drain(*other, 7000, &tokens).reason, FinishReason::kLength);
  EXPECT_EQ(tokens, 30);
  EXPECT_TRUE(wait_until([&] { return this->dispatcher_->active() == 0; }));
}

TYPED_TEST(ServerTransportTest, DroppingAStreamCancelsItsRequest) {
  this->start_server();
  auto client = this->connect();
  ASSERT_TRUE(client);
  {
    auto stream = client->generate(this->ids_request(1, 1000000));
    ASSERT_TRUE(stream);
    auto first = stream->next();
    ASSERT_TRUE(first && *first);
  }
  EXPECT_TRUE(wait_until([&] { return this->dispatcher_->active() == 0; }));
  EXPECT_GE(this->dispatcher_->cancels_seen(), 1u);
}

TYPED_TEST(ServerTransportTest, KilledClientsRequestsAreFreedAndOthersServed) {
  this->start_server();
  auto survivor = this->connect();
  ASSERT_TRUE(survivor);
  auto running = survivor->generate(this->ids_request(42, 1000000));
  ASSERT_TRUE(running);

  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child: stream a never-ending request, report the first token,
    // then wait to be killed. Only async-signal-safe exits from here.
    ::close(ready[0]);
    auto c = Client::connect(this->socket_path(), this->client_options());
    if (!c) ::_exit(3);
    auto s = (*c)->generate(this->ids_request(9, 1000000));
    if (!s) ::_exit(4);
    auto e = s->next();
    if (!e || !*e) ::_exit(5);
    char byte = 'x';
    if (::write(ready[1], &byte, 1) != 1) ::_exit(6);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "child never streamed";
  ::close(ready[0]);
  EXPECT_EQ(this->dispatcher_->active(), 2u);
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));

  // The server notices the EOF, cancels the child's request and frees its
  // session; the survivor's stream keeps going.
  EXPECT_TRUE(wait_until([&] { return this->dispatcher_->active() == 1; }));
  EXPECT_TRUE(wait_until([&] { return this->server_->session_count() == 1; }));
  for (int i = 0; i < 5; ++i) {
    auto event = running->next();
    ASSERT_TRUE(event && *event) << (event ? "ended" : event.error().to_string());
  }
  auto newcomer = this->connect();
  ASSERT_TRUE(newcomer);
  EXPECT_TRUE(newcomer->generate(this->ids_request(3, 4), {}));
}

TYPED_TEST(ServerTransportTest, ClientBreakingTheProtocolIsDisconnectedOthersUnaffected) {
  this->start_server();
  auto good = this->connect();
  ASSERT_TRUE(good);
  auto running = good->generate(this->ids_request(42, 1000000));
  ASSERT_TRUE(running);
  ASSERT_TRUE(running->next());

  auto bad = RawPeer::connect(this->socket_path());
  ASSERT_TRUE(bad);
  auto ack = bad->handshake(this->kShm);
  ASSERT_TRUE(ack) << ack.error().to_string();
  ASSERT_EQ(ack->shm_granted, this->kShm);
  if (this->kShm) {
    ASSERT_TRUE(bad->scribble_request_ring(test_seed()));
  } else {
    // A well-framed body that is not a FlatBuffer.
    std::vector<uint8_t> garbage = {64, 0, 0, 0};
    for (int i = 0; i < 64; ++i) garbage.push_back(static_cast<uint8_t>(i * 37 + 5));
    ASSERT_TRUE(bad->send_bytes(garbage));
  }
  auto reply = bad->receive_message();
  ASSERT_TRUE(reply) << reply.error().to_string();
  auto* error = std::get_if<protocol::ErrorMessage>(&*reply);
  ASSERT_NE(error, nullptr) << protocol::message_name(*reply);
  EXPECT_EQ(error->code, Errc::kProtocolError);
  EXPECT_EQ(error->request_id, 0u);
  EXPECT_TRUE(bad->wait_for_eof());

  for (int i = 0; i < 5; ++i) {
    auto event = running->next();
    ASSERT_TRUE(event && *event);
  }
  EXPECT_TRUE(good->ping());
}

TYPED_TEST(ServerTransportTest, OversizedPromptIsRejectedWithTooLarge) {
  auto options = this->server_options();
  options.max_prompt_tokens = 16;
  this->start_server(options);
  auto client = this->connect();
  ASSERT_TRUE(client);
  GenerateRequest big;
  big.prompt = protocol::PromptIds{std::vector<int32_t>(17, 5)};
  auto stream = client->generate(big);
  ASSERT_TRUE(stream);
  auto event = stream->next();
  ASSERT_FALSE(event);
  EXPECT_EQ(event.error().code, Errc::kTooLarge);
  EXPECT_THAT(event.error().message, HasSubstr("server rejected request"));
  EXPECT_THAT(event.error().message, HasSubstr("--max-prompt-tokens"));
  // The connection is fine afterwards.
  GenerateRequest fits;
  fits.prompt = protocol::PromptIds{std::vector<int32_t>(16, 5)};
  fits.sampling.max_new_tokens = 2;
  EXPECT_TRUE(client->generate(fits, {}));
}

TYPED_TEST(ServerTransportTest, OversizedFrameIsAnsweredAndSkipped) {
  auto options = this->server_options();
  options.max_frame_bytes = 4096;
  this->start_server(options);
  auto peer = RawPeer::connect(this->socket_path());
  ASSERT_TRUE(peer);
  ASSERT_TRUE(peer->handshake(/*want_shm=*/false));
  const uint32_t size = 4096 * 3;
  std::vector<uint8_t> frame = {static_cast<uint8_t>(size), static_cast<uint8_t>(size >> 8), 0, 0};
  frame.resize(4 + size, 0xAB);
  ASSERT_TRUE(peer->send_bytes(frame));
  auto reply = peer->receive_message();
  ASSERT_TRUE(reply) << reply.error().to_string();
  auto* error = std::get_if<protocol::ErrorMessage>(&*reply);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code, Errc::kTooLarge);
  // The oversized body was skipped: the next frame is understood.
  ASSERT_TRUE(peer->send(protocol::encode(protocol::Ping{77, 0})));
  auto pong = peer->receive_message();
  ASSERT_TRUE(pong);
  ASSERT_TRUE(std::holds_alternative<protocol::Pong>(*pong));
  EXPECT_EQ(std::get<protocol::Pong>(*pong).nonce, 77u);
}

TYPED_TEST(ServerTransportTest, UnknownProtocolVersionGetsVersionMismatch) {
  this->start_server();
  auto peer = RawPeer::connect(this->socket_path());
  ASSERT_TRUE(peer);
  auto ack = peer->handshake(this->kShm, /*version=*/protocol::kProtocolVersion + 41);
  ASSERT_FALSE(ack);
  EXPECT_EQ(ack.error().code, Errc::kVersionMismatch);
  EXPECT_THAT(ack.error().message, HasSubstr("protocol version"));
  EXPECT_TRUE(peer->wait_for_eof());
}

TYPED_TEST(ServerTransportTest, RequestBeforeHelloIsAProtocolError) {
  this->start_server();
  auto peer = RawPeer::connect(this->socket_path());
  ASSERT_TRUE(peer);
  GenerateRequest request = this->ids_request(1, 1);
  ASSERT_TRUE(peer->send(protocol::encode(request)));
  auto reply = peer->receive_message();
  ASSERT_TRUE(reply);
  auto* error = std::get_if<protocol::ErrorMessage>(&*reply);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code, Errc::kProtocolError);
  EXPECT_TRUE(peer->wait_for_eof());
}

TYPED_TEST(ServerTransportTest, TooManyInFlightIsRejectedPerRequest) {
  auto options = this->server_options();
  options.max_inflight_per_session = 2;
  this->start_server(options);
  auto client = this->connect();
  ASSERT_TRUE(client);
  auto a = client->generate(this->ids_request(1, 1000000));
  auto b = client->generate(this->ids_request(2, 1000000));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->next() && b->next());  // both admitted
  auto c = client->generate(this->ids_request(3, 5));
  ASSERT_TRUE(c);
  auto rejected = c->next();
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().code, Errc::kResourceExhausted);
  EXPECT_THAT(rejected.error().message, HasSubstr("--max-inflight"));
}

TYPED_TEST(ServerTransportTest, TextPromptWithoutTokenizerIsUnsupported) {
  this->start_server();
  auto client = this->connect();
  ASSERT_TRUE(client);
  GenerateRequest request;
  request.prompt = protocol::PromptText{"hello"};
  auto done = client->generate(request, {});
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code, Errc::kUnsupported);
}

TYPED_TEST(ServerTransportTest, BadSamplingValuesAreRejected) {
  this->start_server();
  auto client = this->connect();
  ASSERT_TRUE(client);
  GenerateRequest request = this->ids_request(1, 4);
  request.sampling.temperature = -1.0f;
  auto done = client->generate(request, {});
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code, Errc::kInvalidArgument);
}

TYPED_TEST(ServerTransportTest, PingAndStatsAnswer) {
  this->start_server();
  auto client = this->connect();
  ASSERT_TRUE(client);
  auto rtt = client->ping();
  ASSERT_TRUE(rtt) << rtt.error().to_string();
  EXPECT_GT(rtt->count(), 0);
  auto stats = client->stats();
  ASSERT_TRUE(stats) << stats.error().to_string();
  EXPECT_EQ(stats->sessions, 1u);
  EXPECT_EQ(stats->requests_active, 0u);
}

}  // namespace
}  // namespace ringserve::testing
