// The shared-memory side of one session: the segment, the request ring the
// server drains, the event ring it fills. Strand-confined (the session's
// executor); never blocks: an empty request ring and a full event ring are
// both waited for with async_wait on their doorbells.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "ringserve/protocol/frame.h"
#include "ringserve/protocol/shm_segment.h"

namespace ringserve::ipc {

class ShmChannel {
 public:
  using Executor = boost::asio::any_io_executor;
  // One request record's bytes (to decode), or the ring's violation.
  using RecordHandler = std::function<void(Expected<std::vector<uint8_t>>)>;

  static Expected<std::unique_ptr<ShmChannel>> create(const Executor& executor,
                                                      const protocol::SegmentOptions& options);
  ~ShmChannel();

  const protocol::ShmSegment& segment() const { return segment_; }

  // Starts draining the request ring; `on_record` runs on the executor for
  // each record in order. After a violation nothing more is delivered.
  void start(RecordHandler on_record);

  // Stops or resumes taking records out of the request ring (backpressure:
  // the client's writer then waits on a full ring).
  void set_paused(bool paused);

  // Queues one event; written at once when the ring has room, else when the
  // client frees space. kTooLarge: it can never fit this ring.
  Status send(protocol::Frame frame);
  size_t pending() const { return pending_.size(); }
  // Payload bytes of the events queued and not yet in the ring.
  size_t pending_bytes() const { return pending_bytes_; }
  // Largest event payload the ring can ever take.
  size_t max_event_bytes() const { return events_.max_payload(); }
  // Runs after pending events were written (lets the session resume reading).
  void on_drained(std::function<void()> callback) { on_drained_ = std::move(callback); }

  // Cancels waits and stops using the segment; idempotent.
  void close();

 private:
  ShmChannel(const Executor& executor, protocol::ShmSegment segment);
  void drain_requests();
  void wait_for_requests();
  void flush_events();
  void wait_for_space();

  protocol::ShmSegment segment_;
  protocol::RingReader requests_;
  protocol::RingWriter events_;
  // Asio owns (and closes) what it watches: these hold dup()s of the bells.
  boost::asio::posix::stream_descriptor request_bell_;
  boost::asio::posix::stream_descriptor space_bell_;
  RecordHandler on_record_;
  std::function<void()> on_drained_;
  std::deque<protocol::Frame> pending_;
  size_t pending_bytes_ = 0;
  std::vector<uint8_t> record_;
  bool paused_ = false;
  bool waiting_requests_ = false;
  bool waiting_space_ = false;
  bool failed_ = false;
  bool closed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ringserve::ipc
