// One client connection: the socket, the optional ring pair, the reader
// thread that demultiplexes events by request id, and the send path that
// many threads share.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ringserve/client/client.h"
#include "ringserve/protocol/codec.h"
#include "ringserve/protocol/shm_segment.h"
#include "ringserve/protocol/unique_fd.h"

namespace ringserve {

// The events of one request as the reader thread delivers them.
struct RequestState {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Event> events;
  std::optional<Error> error;  // rejected, or the connection died first
};

class Connection {
 public:
  static Expected<std::shared_ptr<Connection>> open(const std::string& socket_path,
                                                    const ClientOptions& options);
  ~Connection();

  const ClientOptions& options() const { return options_; }
  const protocol::HelloAck& info() const { return ack_; }
  bool uses_shm() const { return shm_.has_value(); }
  bool alive() const { return alive_.load(); }

  uint64_t next_id() { return next_id_.fetch_add(1); }

  // Registers a request before its GenerateRequest is sent, so no event can
  // arrive for an id nobody waits on. kIoError if the connection is dead.
  Expected<std::shared_ptr<RequestState>> add_request(uint64_t id);
  void remove_request(uint64_t id);

  // Sends one message on the ring (or the socket). Thread-safe.
  Status send(const protocol::Frame& frame);

  // Sends `frame` and waits for the Stats/Pong answering `nonce`.
  Expected<protocol::Message> call(const protocol::Frame& frame, uint64_t nonce);

 private:
  Connection(protocol::UniqueFd socket, ClientOptions options);
  Status handshake();
  Status exchange_hello();
  void read_loop();
  Status read_socket_frame();
  void spin_then_sleep();
  void deliver(protocol::Message message);
  void fail_all(Error error);

  protocol::UniqueFd socket_;
  ClientOptions options_;
  protocol::DecodeLimits limits_;
  protocol::HelloAck ack_;

  std::optional<protocol::ShmSegment> shm_;
  protocol::RingWriter request_writer_;  // under send_mutex_
  protocol::RingReader event_reader_;    // reader thread only

  std::mutex send_mutex_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<bool> alive_{true};
  std::atomic<bool> stopping_{false};

  std::mutex map_mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<RequestState>> requests_;
  std::unordered_map<uint64_t, std::shared_ptr<std::promise<Expected<protocol::Message>>>> calls_;
  std::optional<Error> dead_;           // why the connection ended
  std::optional<Error> session_error_;  // last session-level Error from the server

  std::vector<uint8_t> record_;
  std::thread reader_;
};

}  // namespace ringserve
