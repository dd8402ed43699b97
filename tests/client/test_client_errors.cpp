#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <future>
#include <thread>

#include "ringserve/client/client.h"
#include "ringserve/protocol/codec.h"
#include "ringserve/protocol/fd_passing.h"
#include "support/test_support.h"

namespace ringserve::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// Listens on a path and runs `script` on the first connection, in a thread.
class FakeServer {
 public:
  using Script = std::function<void(int fd)>;
  FakeServer(const std::string& path, Script script) {
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 4), 0);
    thread_ = std::thread([this, script = std::move(script)] {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      script(fd);
      ::close(fd);
    });
  }
  ~FakeServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }

 private:
  int listen_fd_ = -1;
  std::thread thread_;
};

Expected<protocol::Message> receive(int fd) {
  auto frame = RS_TRY(protocol::recv_frame(fd, {}, 0, 10s));
  return protocol::decode_message(frame.payload, {});
}

void send(int fd, const protocol::Frame& frame) {
  ASSERT_TRUE(protocol::send_frame(fd, frame, {}, 10s));
}

void hello_ack(int fd, uint32_t version = 0) {
  auto hello = receive(fd);
  ASSERT_TRUE(hello) << hello.error().to_string();
  ASSERT_TRUE(std::holds_alternative<protocol::Hello>(*hello));
  protocol::HelloAck ack;
  ack.protocol_version = version;
  ack.server_name = "fake";
  ack.max_frame_bytes = 1 << 20;
  send(fd, protocol::encode(ack));
}

class ClientErrorsTest : public ::testing::Test {
 protected:
  std::string path() const { return (dir_.path() / "fake.sock").string(); }
  ClientOptions options(std::chrono::milliseconds read_timeout = 10s) const {
    ClientOptions o;
    o.use_shm = false;
    o.read_timeout = read_timeout;
    return o;
  }
  static GenerateRequest request() {
    GenerateRequest r;
    r.prompt = protocol::PromptIds{{1, 2, 3}};
    return r;
  }
  TempDir dir_;
};

TEST_F(ClientErrorsTest, NoServerIsUnavailable) {
  auto client = Client::connect(path(), options());
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, Errc::kUnavailable);
  EXPECT_THAT(client.error().message, HasSubstr(path()));
}

TEST_F(ClientErrorsTest, TooLongPathIsInvalidArgument) {
  auto client = Client::connect(std::string(200, 'x'), options());
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, Errc::kInvalidArgument);
}

TEST_F(ClientErrorsTest, ServerRefusingOurVersionIsVersionMismatch) {
  FakeServer server(path(), [](int fd) {
    ASSERT_TRUE(receive(fd));
    send(fd, protocol::encode_error(0, make_error(Errc::kVersionMismatch, "speak 7")));
  });
  auto client = Client::connect(path(), options());
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, Errc::kVersionMismatch);
  EXPECT_THAT(client.error().message, HasSubstr("speak 7"));
}

TEST_F(ClientErrorsTest, ServerAckingAnotherVersionIsVersionMismatch) {
  FakeServer server(path(), [](int fd) { hello_ack(fd, protocol::kProtocolVersion + 1); });
  auto client = Client::connect(path(), options());
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, Errc::kVersionMismatch);
}

TEST_F(ClientErrorsTest, SilentServerTimesOutTheHandshake) {
  std::promise<void> release;
  auto released = release.get_future().share();
  FakeServer server(path(), [released](int fd) {
    (void)receive(fd);
    released.wait();
  });
  auto client = Client::connect(path(), options(150ms));
  release.set_value();
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, Errc::kTimeout);
}

TEST_F(ClientErrorsTest, ServerGoneMidStreamIsIoError) {
  FakeServer server(path(), [](int fd) {
    hello_ack(fd);
    auto request = receive(fd);
    ASSERT_TRUE(request);
    auto* generate = std::get_if<protocol::GenerateRequest>(&*request);
    ASSERT_NE(generate, nullptr);
    protocol::TokenEvent tokens;
    tokens.request_id = generate->request_id;
    tokens.token_ids = {42};
    tokens.text = "hi";
    send(fd, protocol::encode(tokens));
    // ...and the server dies.
  });
  auto client = Client::connect(path(), options());
  ASSERT_TRUE(client) << client.error().to_string();
  auto stream = (*client)->generate(request());
  ASSERT_TRUE(stream);
  auto first = stream->next();
  ASSERT_TRUE(first && *first);
  EXPECT_EQ(std::get<TokenEvent>(**first).text, "hi");
  auto gone = stream->next();
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Errc::kIoError);
  EXPECT_THAT(gone.error().message, HasSubstr("closed"));
  EXPECT_FALSE((*client)->connected());
  auto after = (*client)->generate(request());
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, Errc::kIoError);
}

TEST_F(ClientErrorsTest, RejectionCarriesTheServersCodeAndMessage) {
  FakeServer server(path(), [](int fd) {
    hello_ack(fd);
    auto request = receive(fd);
    ASSERT_TRUE(request);
    auto id = std::get<protocol::GenerateRequest>(*request).request_id;
    send(fd, protocol::encode_error(id, make_error(Errc::kResourceExhausted, "queue is full")));
    (void)receive(fd);  // hold the connection until the client leaves
  });
  auto client = Client::connect(path(), options());
  ASSERT_TRUE(client);
  auto done = (*client)->generate(request(), {});
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code, Errc::kResourceExhausted);
  EXPECT_THAT(done.error().message, HasSubstr("server rejected request"));
  EXPECT_THAT(done.error().message, HasSubstr("queue is full"));
}

TEST_F(ClientErrorsTest, QuietStreamTimesOutAndStaysUsable) {
  std::promise<void> send_done;
  auto go = send_done.get_future().share();
  FakeServer server(path(), [go](int fd) {
    hello_ack(fd);
    auto request = receive(fd);
    ASSERT_TRUE(request);
    go.wait();
    protocol::Done done;
    done.request_id = std::get<protocol::GenerateRequest>(*request).request_id;
    done.reason = protocol::FinishReason::kStop;
    send(fd, protocol::encode(done));
    (void)receive(fd);
  });
  auto client = Client::connect(path(), options(100ms));
  ASSERT_TRUE(client);
  auto stream = (*client)->generate(request());
  ASSERT_TRUE(stream);
  auto quiet = stream->next();
  ASSERT_FALSE(quiet);
  EXPECT_EQ(quiet.error().code, Errc::kTimeout);
  send_done.set_value();
  // The request is still live: the Done that arrives later is delivered.
  Expected<std::optional<Event>> done = make_error(Errc::kInternal, "unset");
  for (int attempt = 0; attempt < 100; ++attempt) {
    done = stream->next();
    if (done || done.error().code != Errc::kTimeout) break;
  }
  ASSERT_TRUE(done) << done.error().to_string();
  ASSERT_TRUE(*done);
  EXPECT_EQ(std::get<Done>(**done).reason, FinishReason::kStop);
}

TEST_F(ClientErrorsTest, GarbageFromTheServerFailsStreamsWithoutCrashing) {
  FakeServer server(path(), [](int fd) {
    hello_ack(fd);
    (void)receive(fd);
    const uint8_t garbage[] = {16, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    ::send(fd, garbage, sizeof(garbage), MSG_NOSIGNAL);
    (void)receive(fd);
  });
  auto client = Client::connect(path(), options());
  ASSERT_TRUE(client);
  auto stream = (*client)->generate(request());
  ASSERT_TRUE(stream);
  auto event = stream->next();
  ASSERT_FALSE(event);
  EXPECT_EQ(event.error().code, Errc::kProtocolError);
}

}  // namespace
}  // namespace ringserve::testing
