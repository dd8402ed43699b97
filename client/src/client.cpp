#include "ringserve/client/client.h"

#include <unistd.h>

#include <cstdlib>

#include "connection.h"
#include "ringserve/protocol/codec.h"

namespace ringserve {

std::string Client::default_socket_path() {
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime) {
    return std::string(runtime) + "/ringserve.sock";
  }
  return fmt::format("/tmp/ringserve-{}/ringserve.sock", ::getuid());
}

Expected<std::unique_ptr<Client>> Client::connect(const std::string& socket_path,
                                                  const ClientOptions& options) {
  auto connection = RS_TRY(Connection::open(socket_path, options));
  return std::unique_ptr<Client>(new Client(std::move(connection)));
}

Client::Client(std::shared_ptr<Connection> connection) : connection_(std::move(connection)) {}

Client::~Client() = default;

Expected<Stream> Client::generate(const GenerateRequest& request) {
  const uint64_t id = connection_->next_id();
  GenerateRequest copy = request;
  copy.request_id = id;
  protocol::Frame frame = protocol::encode(copy);
  const uint32_t limit = connection_->info().max_frame_bytes;
  if (limit != 0 && frame.payload().size() > limit) {
    return make_error(Errc::kTooLarge, "request of {} bytes exceeds the server's {} byte limit",
                      frame.payload().size(), limit);
  }
  auto state = RS_TRY(connection_->add_request(id));
  if (Status sent = connection_->send(frame); !sent) {
    connection_->remove_request(id);
    return sent.error();
  }
  return Stream(connection_, std::move(state), id);
}

Expected<Done> Client::generate(const GenerateRequest& request, const TokenCallback& on_tokens) {
  auto stream = RS_TRY(generate(request));
  for (;;) {
    auto event = RS_TRY(stream.next());
    if (!event) return make_error(Errc::kInternal, "stream ended without Done");
    if (auto* tokens = std::get_if<TokenEvent>(&*event)) {
      if (on_tokens) on_tokens(*tokens);
      continue;
    }
    return std::get<Done>(std::move(*event));
  }
}

Status Client::cancel(uint64_t request_id) {
  return connection_->send(protocol::encode(protocol::Cancel{request_id}));
}

Expected<ServerStats> Client::stats() {
  const uint64_t nonce = connection_->next_id();
  auto reply = RS_TRY(connection_->call(protocol::encode(protocol::StatsRequest{nonce}), nonce));
  return std::get<protocol::Stats>(std::move(reply));
}

Expected<std::chrono::nanoseconds> Client::ping() {
  const uint64_t nonce = connection_->next_id();
  const auto start = std::chrono::steady_clock::now();
  protocol::Ping ping{nonce, static_cast<uint64_t>(start.time_since_epoch().count())};
  RS_TRY_STATUS(connection_->call(protocol::encode(ping), nonce));
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start);
}

const ServerInfo& Client::server_info() const {
  return connection_->info();
}
bool Client::uses_shm() const {
  return connection_->uses_shm();
}
bool Client::connected() const {
  return connection_->alive();
}

}  // namespace ringserve
