#include <cstring>

#include "ring_internal.h"

namespace ringserve::protocol {

using detail::shared;

Expected<RingWriter> RingWriter::attach(RingEndpointArgs args) {
  RS_TRY_STATUS(detail::check_endpoint_args(args));
  RingWriter w;
  w.control_ = reinterpret_cast<RingControl*>(args.region.data());
  w.data_ = args.region.data() + kRingControlBytes;
  w.capacity_ = args.capacity;
  w.data_bell_ = args.data_bell;
  w.space_bell_ = args.space_bell;
  w.keepalive_ = std::move(args.keepalive);
  // SYNC POINT: acquire pairs with the reader's release of tail (and the
  // creator's initialisation, published by the fd hand-over).
  const uint64_t tail = shared(w.control_->tail).load(std::memory_order_acquire);
  const uint64_t head = shared(w.control_->head).load(std::memory_order_relaxed);
  if (head % kRingAlignment != 0 || tail % kRingAlignment != 0 || head - tail > w.capacity_) {
    return make_error(Errc::kProtocolError, "ring writer: impossible head {} / tail {}", head,
                      tail);
  }
  w.head_ = head;
  w.cached_tail_ = tail;
  return w;
}

int RingWriter::wait_fd() const noexcept {
  return space_bell_ ? space_bell_->fd() : -1;
}

uint64_t RingWriter::bytes_needed(size_t payload_bytes) const noexcept {
  const uint64_t record = ring_record_bytes(payload_bytes);
  const uint64_t to_end = capacity_ - (head_ & (capacity_ - 1));
  // A record that does not fit before the end needs a padding record first.
  return record <= to_end ? record : to_end + record;
}

bool RingWriter::has_room(uint64_t need) const noexcept {
  return capacity_ - (head_ - cached_tail_) >= need;
}

Expected<bool> RingWriter::refresh_tail() {
  // SYNC POINT: acquire pairs with the reader's release store of tail: the
  // reader has finished copying every byte before it, so we may overwrite them.
  const uint64_t tail = shared(control_->tail).load(std::memory_order_acquire);
  // The tail may only move forward, up to our head, and stays 8-aligned.
  if (tail % kRingAlignment != 0 || tail - cached_tail_ > head_ - cached_tail_) {
    failed_ = true;
    return make_error(Errc::kProtocolError,
                      "ring writer: reader tail {} outside [{}, {}] or misaligned", tail,
                      cached_tail_, head_);
  }
  cached_tail_ = tail;
  return true;
}

Expected<bool> RingWriter::try_write(std::span<const uint8_t> payload) {
  if (failed_) return make_error(Errc::kProtocolError, "ring writer: ring already violated");
  if (control_ == nullptr) return make_error(Errc::kInvalidArgument, "ring writer: not attached");
  if (payload.size() > max_payload()) {
    return make_error(Errc::kTooLarge, "record of {} bytes exceeds the ring maximum of {}",
                      payload.size(), max_payload());
  }
  const uint64_t need = bytes_needed(payload.size());
  if (!has_room(need)) {
    RS_TRY(refresh_tail());
    if (!has_room(need)) return false;
  }
  uint64_t offset = head_ & (capacity_ - 1);
  const uint64_t to_end = capacity_ - offset;
  const uint64_t record = ring_record_bytes(payload.size());
  if (record > to_end) {
    const RecordHeader pad{static_cast<uint32_t>(to_end - kRingRecordHeaderBytes),
                           static_cast<uint32_t>(RecordKind::kPadding)};
    std::memcpy(data_ + offset, &pad, sizeof(pad));
    head_ += to_end;
    offset = 0;
  }
  const RecordHeader header{static_cast<uint32_t>(payload.size()),
                            static_cast<uint32_t>(RecordKind::kData)};
  std::memcpy(data_ + offset, &header, sizeof(header));
  if (!payload.empty()) {
    std::memcpy(data_ + offset + kRingRecordHeaderBytes, payload.data(), payload.size());
  }
  head_ += record;
  // SYNC POINT: release publishes the record bytes written above to the
  // reader's acquire load of head.
  shared(control_->head).store(head_, std::memory_order_release);
  // SYNC POINT: seq_cst fence between our head store and the load of
  // reader_waiting; the reader fences between announcing and re-loading
  // head, so either it sees this record or we see its announcement.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto waiting = shared(control_->reader_waiting);
  if (waiting.load(std::memory_order_relaxed) != 0 &&
      waiting.exchange(0, std::memory_order_relaxed) != 0) {
    data_bell_->ring();
  }
  return true;
}

bool RingWriter::prepare_wait(size_t payload_bytes) {
  if (failed_ || control_ == nullptr || payload_bytes > max_payload()) return true;
  shared(control_->writer_waiting).store(1, std::memory_order_relaxed);
  // SYNC POINT: seq_cst fence between announcing and re-loading tail; pairs
  // with the fence in RingReader::release_record().
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!refresh_tail() || has_room(bytes_needed(payload_bytes))) {
    shared(control_->writer_waiting).store(0, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void RingWriter::finish_wait() {
  if (control_ == nullptr) return;
  space_bell_->drain();
  shared(control_->writer_waiting).store(0, std::memory_order_relaxed);
}

Status RingWriter::write(std::span<const uint8_t> payload, const WaitOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const bool forever = options.timeout.count() < 0;
  const auto deadline = start + (forever ? std::chrono::nanoseconds(0) : options.timeout);
  for (;;) {
    if (RS_TRY(try_write(payload))) return ok();
    const auto now = Clock::now();
    if (now - start >= options.spin || (!forever && now >= deadline)) break;
    detail::cpu_relax();
  }
  for (;;) {
    if (!prepare_wait(payload.size())) {
      std::chrono::nanoseconds left(-1);
      if (!forever) {
        left = deadline - Clock::now();
        if (left.count() <= 0) left = std::chrono::nanoseconds(0);
      }
      auto rung = space_bell_->wait(left);
      if (!rung) {
        finish_wait();
        return std::move(rung).error();
      }
    }
    finish_wait();
    if (RS_TRY(try_write(payload))) return ok();
    if (!forever && Clock::now() >= deadline) {
      return make_error(
          Errc::kTimeout, "ring full: no room for {} bytes within {} us", payload.size(),
          std::chrono::duration_cast<std::chrono::microseconds>(options.timeout).count());
    }
  }
}

}  // namespace ringserve::protocol
