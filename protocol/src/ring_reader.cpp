#include <cstring>

#include "ring_internal.h"

namespace ringserve::protocol {

using detail::shared;

Expected<RingReader> RingReader::attach(RingEndpointArgs args) {
  RS_TRY_STATUS(detail::check_endpoint_args(args));
  RingReader r;
  r.control_ = reinterpret_cast<RingControl*>(args.region.data());
  r.data_ = args.region.data() + kRingControlBytes;
  r.capacity_ = args.capacity;
  r.data_bell_ = args.data_bell;
  r.space_bell_ = args.space_bell;
  r.keepalive_ = std::move(args.keepalive);
  // SYNC POINT: acquire pairs with the writer's release of head.
  const uint64_t head = shared(r.control_->head).load(std::memory_order_acquire);
  const uint64_t tail = shared(r.control_->tail).load(std::memory_order_relaxed);
  if (head % kRingAlignment != 0 || tail % kRingAlignment != 0 || head - tail > r.capacity_) {
    return make_error(Errc::kProtocolError, "ring reader: impossible head {} / tail {}", head,
                      tail);
  }
  r.tail_ = tail;
  r.cached_head_ = head;
  return r;
}

int RingReader::wait_fd() const noexcept {
  return data_bell_ ? data_bell_->fd() : -1;
}

Expected<bool> RingReader::poll_head() {
  // SYNC POINT: acquire pairs with the writer's release store of head: every
  // record byte before head is visible once we see head.
  const uint64_t head = shared(control_->head).load(std::memory_order_acquire);
  // The head may only move forward, by at most the free space, and stays 8-aligned.
  if (head % kRingAlignment != 0 || head - cached_head_ > tail_ + capacity_ - cached_head_) {
    failed_ = true;
    return make_error(Errc::kProtocolError,
                      "ring reader: writer head {} outside [{}, {}] or misaligned", head,
                      cached_head_, tail_ + capacity_);
  }
  cached_head_ = head;
  return cached_head_ != tail_;
}

void RingReader::release_record(uint64_t bytes) {
  tail_ += bytes;
  // SYNC POINT: release: our copies out of the record happen-before the
  // writer's acquire load of tail and its reuse of those bytes.
  shared(control_->tail).store(tail_, std::memory_order_release);
  // SYNC POINT: seq_cst fence between our tail store and the load of
  // writer_waiting; pairs with the fence in RingWriter::prepare_wait().
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto waiting = shared(control_->writer_waiting);
  if (waiting.load(std::memory_order_relaxed) != 0 &&
      waiting.exchange(0, std::memory_order_relaxed) != 0) {
    space_bell_->ring();
  }
}

Expected<bool> RingReader::try_read(std::vector<uint8_t>& out) {
  if (failed_) return make_error(Errc::kProtocolError, "ring reader: ring already violated");
  if (control_ == nullptr) return make_error(Errc::kInvalidArgument, "ring reader: not attached");
  // At most two records: one padding record, then the data record after the wrap.
  for (int step = 0; step < 2; ++step) {
    if (cached_head_ == tail_ && !RS_TRY(poll_head())) return false;
    const uint64_t available = cached_head_ - tail_;
    const uint64_t offset = tail_ & (capacity_ - 1);
    const uint64_t to_end = capacity_ - offset;
    // Read the header once; every decision below uses this private copy.
    RecordHeader header;
    std::memcpy(&header, data_ + offset, sizeof(header));
    const auto fail = [&](std::string_view what) -> Error {
      failed_ = true;
      return make_error(Errc::kProtocolError,
                        "ring reader: {} at position {} (length {}, kind {:#x}, {} bytes "
                        "published)",
                        what, tail_, header.length, header.kind, available);
    };
    if (header.kind == static_cast<uint32_t>(RecordKind::kPadding)) {
      const uint64_t record = kRingRecordHeaderBytes + uint64_t{header.length};
      if (record != to_end) return fail("padding record does not end at the wrap point");
      if (record > available) return fail("padding record runs past head");
      if (step != 0) return fail("two padding records in a row");
      release_record(record);
      continue;
    }
    if (header.kind != static_cast<uint32_t>(RecordKind::kData)) return fail("unknown record kind");
    if (header.length > ring_max_payload(capacity_)) return fail("record longer than the maximum");
    const uint64_t record = ring_record_bytes(header.length);
    if (record > to_end) return fail("record straddles the end of the ring");
    if (record > available) return fail("record runs past head");
    out.resize(header.length);
    if (header.length != 0) {
      std::memcpy(out.data(), data_ + offset + kRingRecordHeaderBytes, header.length);
    }
    release_record(record);
    return true;
  }
  // Unreachable: the second iteration either returns or fails.
  return false;
}

bool RingReader::prepare_wait() {
  if (failed_ || control_ == nullptr) return true;
  shared(control_->reader_waiting).store(1, std::memory_order_relaxed);
  // SYNC POINT: seq_cst fence between announcing and re-loading head; pairs
  // with the fence after the head store in RingWriter::try_write().
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto pending = poll_head();
  if (!pending || *pending) {
    shared(control_->reader_waiting).store(0, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void RingReader::finish_wait() {
  if (control_ == nullptr) return;
  data_bell_->drain();
  shared(control_->reader_waiting).store(0, std::memory_order_relaxed);
}

Status RingReader::read(std::vector<uint8_t>& out, const WaitOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const bool forever = options.timeout.count() < 0;
  const auto deadline = start + (forever ? std::chrono::nanoseconds(0) : options.timeout);
  for (;;) {
    if (RS_TRY(try_read(out))) return ok();
    const auto now = Clock::now();
    if (now - start >= options.spin || (!forever && now >= deadline)) break;
    detail::cpu_relax();
  }
  for (;;) {
    if (!prepare_wait()) {
      std::chrono::nanoseconds left(-1);
      if (!forever) {
        left = deadline - Clock::now();
        if (left.count() <= 0) left = std::chrono::nanoseconds(0);
      }
      auto rung = data_bell_->wait(left);
      if (!rung) {
        finish_wait();
        return std::move(rung).error();
      }
    }
    finish_wait();
    if (RS_TRY(try_read(out))) return ok();
    if (!forever && Clock::now() >= deadline) {
      return make_error(
          Errc::kTimeout, "no record within {} us",
          std::chrono::duration_cast<std::chrono::microseconds>(options.timeout).count());
    }
  }
}

}  // namespace ringserve::protocol
