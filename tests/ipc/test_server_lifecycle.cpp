// The server's life around its sessions: claiming the socket path, session
// limits, and graceful shutdown (in process and by SIGTERM to a separate
// server process), over both transports.
#include <gmock/gmock.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>

#include "raw_peer.h"
#include "server_fixture.h"

extern char** environ;

namespace ringserve::testing {
namespace {

using ::testing::HasSubstr;

template <class T>
using ServerLifecycleTest = ServerTest<T>;
TYPED_TEST_SUITE(ServerLifecycleTest, Transports, TransportName);

// A socket file nobody listens on, as a crashed server leaves behind.
void make_stale_socket(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(fd);
  ASSERT_TRUE(std::filesystem::exists(path));
}

TYPED_TEST(ServerLifecycleTest, StaleSocketFileIsReplaced) {
  make_stale_socket(this->socket_path());
  this->start_server();
  auto client = this->connect();
  ASSERT_TRUE(client);
  EXPECT_TRUE(client->ping());
}

TYPED_TEST(ServerLifecycleTest, PathOwnedByALiveServerIsRefused) {
  this->start_server();
  ScriptedDispatcher other_dispatcher;
  ipc::Server second(this->io_, this->server_options(), other_dispatcher);
  auto started = second.start();
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, Errc::kIoError);
  EXPECT_THAT(started.error().message, HasSubstr("live server"));
  // The first server still owns the path and serves.
  auto client = this->connect();
  ASSERT_TRUE(client);
  EXPECT_TRUE(client->ping());
}

TYPED_TEST(ServerLifecycleTest, ARegularFileAtThePathIsNeverDeleted) {
  { std::ofstream(this->socket_path()) << "user data"; }
  ScriptedDispatcher dispatcher;
  ipc::Server server(this->io_, this->server_options(), dispatcher);
  auto started = server.start();
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(read_file(this->socket_path()), "user data");
}

TYPED_TEST(ServerLifecycleTest, SocketFileGetsTheRequestedMode) {
  auto options = this->server_options();
  options.socket_mode = 0660;
  this->start_server(options);
  struct stat st {};
  ASSERT_EQ(::stat(this->socket_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
}

TYPED_TEST(ServerLifecycleTest, NoServerIsUnavailable) {
  auto client = Client::connect(this->socket_path(), this->client_options());
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, Errc::kUnavailable);
  make_stale_socket(this->socket_path());
  client = Client::connect(this->socket_path(), this->client_options());
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, Errc::kUnavailable);
}

TYPED_TEST(ServerLifecycleTest, SessionsAboveTheLimitAreRefused) {
  auto options = this->server_options();
  options.max_sessions = 1;
  this->start_server(options);
  auto first = this->connect();
  ASSERT_TRUE(first);
  auto second = Client::connect(this->socket_path(), this->client_options());
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::kResourceExhausted);
  EXPECT_THAT(second.error().message, HasSubstr("--max-sessions"));
  EXPECT_TRUE(first->ping());
}

TYPED_TEST(ServerLifecycleTest, InProcessShutdownFinishesShortRequestsAndCancelsLongOnes) {
  auto options = this->server_options();
  this->start_server(options, std::chrono::microseconds(1000));
  auto client = this->connect();
  ASSERT_TRUE(client);
  auto short_one = client->generate(this->ids_request(10, 20));
  auto long_one = client->generate(this->ids_request(20, 1000000));
  ASSERT_TRUE(short_one && long_one);
  ASSERT_TRUE(short_one->next() && long_one->next());
  std::promise<void> finished;
  this->server_->shutdown(std::chrono::milliseconds(300), [&] { finished.set_value(); });
  EXPECT_TRUE(wait_until([&] { return !std::filesystem::exists(this->socket_path()); }));
  // New requests on an existing connection are refused while draining.
  auto late = client->generate(this->ids_request(30, 5));
  if (late) {
    auto refused = late->next();
    if (!refused) {
      EXPECT_EQ(refused.error().code, Errc::kUnavailable);
    }
  }
  EXPECT_EQ(this->drain(*short_one, 11).reason, FinishReason::kLength);
  Done cancelled = this->drain(*long_one, 21);
  EXPECT_EQ(cancelled.reason, FinishReason::kCancelled);
  finished.get_future().wait();
  EXPECT_EQ(this->server_->session_count(), 0u);
  EXPECT_FALSE(std::filesystem::exists(this->socket_path()));
}

// SIGTERM to a separate server process: in-flight requests finish (or end
// with Done cancelled after the grace period), the socket file is removed,
// and the process exits 0.
TYPED_TEST(ServerLifecycleTest, SigtermDrainsAndExitsCleanly) {
  const std::string server_bin = binary_path("ipc_test_server").string();
  ASSERT_TRUE(std::filesystem::exists(server_bin)) << server_bin;
  const std::string path = this->socket_path();
  std::vector<std::string> args = {
      server_bin, "--socket", path, "--tick-us", "2000", "--shutdown-grace-ms", "400"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(::posix_spawn(&pid, server_bin.c_str(), nullptr, nullptr, argv.data(), environ), 0);
  struct Reaper {
    pid_t pid;
    bool reaped = false;
    ~Reaper() {
      if (!reaped) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } reaper{pid};

  std::unique_ptr<Client> client;
  ASSERT_TRUE(wait_until([&] {
    auto c = Client::connect(path, this->client_options());
    if (c) client = std::move(*c);
    return c.has_value();
  }));
  ASSERT_EQ(client->uses_shm(), this->kShm);
  auto short_one = client->generate(this->ids_request(100, 10));
  auto long_one = client->generate(this->ids_request(200, 1000000));
  ASSERT_TRUE(short_one && long_one);
  ASSERT_TRUE(short_one->next() && long_one->next());

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  EXPECT_EQ(this->drain(*short_one, 101).reason, FinishReason::kLength);
  EXPECT_EQ(this->drain(*long_one, 201).reason, FinishReason::kCancelled);

  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  reaper.reaped = true;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(std::filesystem::exists(path));
  auto again = Client::connect(path, this->client_options());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::kUnavailable);
}

}  // namespace
}  // namespace ringserve::testing
