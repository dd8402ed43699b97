#include "cuda/checkpoint_stream.h"

#include <algorithm>
#include <chrono>
#include <variant>
#include <vector>

#include "cuda/device_memory.h"
#include "cuda_check.h"
#include "util/log.h"

namespace ringserve::cuda {
namespace {

// On every exit, copies from the pinned slots may still be in flight; the
// slots must outlive them, so the stream is drained before they are freed.
struct StreamDrain {
  cudaStream_t stream;
  ~StreamDrain() { cudaStreamSynchronize(stream); }
};

}  // namespace

Expected<CheckpointStreamStats> stream_checkpoint_rows(const std::filesystem::path& file,
                                                       std::span<const io::TensorExtent> tensors,
                                                       void* staging, size_t staging_bytes,
                                                       cudaStream_t stream,
                                                       const RowsHandler& on_rows,
                                                       const CheckpointStreamOptions& options) {
  if (options.slots < 0)
    return make_error(Errc::kInvalidArgument, "checkpoint stream: {} slots", options.slots);
  const int nslots =
      options.slots > 0 ? options.slots
                        : (options.reader.pread_threads > 0 ? options.reader.pread_threads : 8) + 8;
  const size_t slot_bytes = (std::max<size_t>(options.slot_bytes, 1) + io::kDirectAlignment - 1) /
                            io::kDirectAlignment * io::kDirectAlignment;
  const auto setup_start = std::chrono::steady_clock::now();
  auto planner =
      RS_TRY(io::RowBlockPlanner::create({tensors.begin(), tensors.end()}, staging_bytes));
  auto reader = RS_TRY(io::FileReader::open(file, options.reader));
  const io::ByteRange range = planner.range();

  // One per slot; destroyed after the drain.
  const Events events = RS_TRY(Events::create(nslots));
  // Declared before the drain, so on every exit the stream is drained
  // before the slots are freed. Registered huge pages: on the H200 VM they
  // were ready in a fraction of cudaHostAlloc's time (7-14 against 38-52 ms
  // of a 0.4 s load). Both kinds are page-aligned, so every slot is 4096-aligned
  // as O_DIRECT needs.
  auto pinned = PinnedBuffer::allocate(slot_bytes * nslots, HostMemory::kPinnedRegistered,
                                       "checkpoint slots");
  if (!pinned) {
    log::get("io")->info("{}; using cudaHostAlloc", pinned.error().message);
    pinned = RS_TRY(PinnedBuffer::allocate(slot_bytes * nslots, "checkpoint slots"));
  }
  std::vector<std::span<std::byte>> slots;
  for (int i = 0; i < nslots; ++i)
    slots.emplace_back(pinned->host<std::byte>() + i * slot_bytes, slot_bytes);
  StreamDrain drain{stream};
  auto* stage = static_cast<std::byte*>(staging);
  std::vector<io::PlanStep> steps;
  const auto on_chunk = [&](const io::Chunk& c) -> Status {
    steps.clear();
    RS_TRY_STATUS(planner.feed(c.offset, c.bytes.size(), steps));
    size_t last_piece = steps.size();
    for (size_t i = 0; i < steps.size(); ++i)
      if (std::holds_alternative<io::StagePiece>(steps[i])) last_piece = i;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (const auto* p = std::get_if<io::StagePiece>(&steps[i])) {
        CUDA_CHECK(cudaMemcpyAsync(stage + p->staging_offset,
                                   c.bytes.data() + (p->file_offset - c.offset), p->bytes,
                                   cudaMemcpyHostToDevice, stream));
        // Recorded before the handlers' work, so the slot frees up as soon
        // as its bytes are on the device.
        if (i == last_piece) CUDA_CHECK(cudaEventRecord(events[c.slot], stream));
      } else {
        const auto& b = std::get<io::RowBlock>(steps[i]);
        RS_TRY_STATUS(on_rows(StagedRows{b.tensor, static_cast<int64_t>(b.row_begin),
                                         static_cast<int64_t>(b.row_end), stage + b.staging_offset},
                              stream));
      }
    }
    return ok();
  };
  const auto before_reuse = [&](size_t slot) -> Status {
    CUDA_CHECK(cudaEventSynchronize(events[slot]));
    return ok();
  };

  const auto start = std::chrono::steady_clock::now();
  const io::ReadStats read =
      RS_TRY(reader.read(range.offset, range.length, slots, on_chunk, before_reuse));
  if (!planner.done())
    return make_error(Errc::kInternal, "{}: the read ended before every row was staged",
                      file.string());
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CheckpointStreamStats stats;
  stats.bytes = range.length;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.setup_seconds = std::chrono::duration<double>(start - setup_start).count();
  stats.method = range.length > 0 ? read.method : reader.method();
  log::get("io")->info(
      "{}: {} tensors, {:.1f} MiB to the GPU in {:.3f} s: {:.2f} GB/s ({}, {} pinned slots of {} "
      "MiB; set-up {:.3f} s)",
      file.string(), tensors.size(), stats.bytes / 1048576.0, stats.seconds, stats.gb_per_s(),
      io::method_name(stats.method), nslots, slot_bytes >> 20, stats.setup_seconds);
  return stats;
}

}  // namespace ringserve::cuda
