// The checkpoint stream on a real GPU: every row block a handler sees must
// hold exactly the file's bytes for those rows, through every read path, with
// slots and staging far smaller than the tensors.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "cuda/checkpoint_stream.h"
#include "cuda/device_memory.h"
#include "support/test_support.h"

namespace ringserve::cuda {
namespace {

using io::TensorExtent;

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

// Odd row sizes, an unaligned start, gaps, an empty tensor, a 1-D tensor and
// tensors many times larger than the staging and the slots.
const std::vector<TensorExtent> kTensors{
    {5, 7 * 13, 13},                // starts off any alignment
    {5 + 91 + 100, 5, 5},           // after a 100-byte gap; one row
    {201, 37 * 1000, 1000},         // 3 rows a block
    {37201, 0, 8},                  // no rows
    {37201 + 3, 100 * 1531, 1531},  // one row a block
    {190304 + 4096, 64 * 2048, 2048},
};
constexpr size_t kStagingBytes = 3000;
constexpr uint64_t kFileBytes = 190304 + 4096 + 64 * 2048 + 777;

class CheckpointStream : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(ringserve::testing::test_seed());
    content_.resize(kFileBytes);
    for (auto& b : content_) b = static_cast<std::byte>(rng());
    path_ = dir_.path() / "model.bin";
    std::ofstream f(path_, std::ios::binary);
    f.write(reinterpret_cast<const char*>(content_.data()), kFileBytes);
    ASSERT_TRUE(f.good());
    f.close();
    auto staging = DeviceBuffer::allocate(kStagingBytes, "staging");
    ASSERT_TRUE(staging) << staging.error().to_string();
    staging_ = std::move(*staging);
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::vector<std::byte> tensor_bytes(size_t i) const {
    const auto& t = kTensors[i];
    return {content_.begin() + t.offset, content_.begin() + t.offset + t.bytes};
  }

  CheckpointStreamOptions small_slots(io::ReaderOptions reader = {}) const {
    CheckpointStreamOptions o;
    o.reader = reader;
    o.slot_bytes = 4096;
    o.slots = 3;
    return o;
  }

  // Streams with the handler copying every block back to the host at once.
  void stream_to_host(const CheckpointStreamOptions& options) {
    std::vector<std::vector<std::byte>> got(kTensors.size());
    std::vector<int64_t> next_row(kTensors.size(), 0);
    auto stats = stream_checkpoint_rows(
        path_, kTensors, staging_.as(), kStagingBytes, stream_,
        [&](const StagedRows& r, cudaStream_t s) -> Status {
          EXPECT_EQ(s, stream_);
          EXPECT_LT(r.tensor, kTensors.size());
          EXPECT_EQ(r.row_begin, next_row[r.tensor]);
          EXPECT_GT(r.row_end, r.row_begin);
          next_row[r.tensor] = r.row_end;
          const size_t n = (r.row_end - r.row_begin) * kTensors[r.tensor].row_bytes;
          EXPECT_LE(n, kStagingBytes);
          auto& out = got[r.tensor];
          out.resize(out.size() + n);
          EXPECT_EQ(
              cudaMemcpyAsync(out.data() + out.size() - n, r.device, n, cudaMemcpyDeviceToHost, s),
              cudaSuccess);
          EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
          return ok();
        },
        options);
    if (!stats && stats.error().code == Errc::kUnsupported)
      GTEST_SKIP() << "read path unavailable here: " << stats.error().to_string();
    ASSERT_TRUE(stats) << stats.error().to_string();
    EXPECT_EQ(stats->bytes, kTensors.back().offset + kTensors.back().bytes - kTensors[0].offset);
    for (size_t i = 0; i < kTensors.size(); ++i) {
      EXPECT_EQ(next_row[i] * kTensors[i].row_bytes, kTensors[i].bytes) << "tensor " << i;
      EXPECT_TRUE(got[i] == tensor_bytes(i)) << "tensor " << i << " differs from the file";
    }
    last_method_ = stats->method;
  }

  ringserve::testing::TempDir dir_;
  std::filesystem::path path_;
  std::vector<std::byte> content_;
  DeviceBuffer staging_;
  cudaStream_t stream_ = nullptr;
  io::Method last_method_ = io::Method::kPreadBuffered;
};

TEST_F(CheckpointStream, BlocksMatchTheFile) {
  stream_to_host(small_slots());
}

TEST_F(CheckpointStream, PreadWithoutDirectIo) {
  stream_to_host(small_slots({io::Backend::kPread, io::DirectIo::kOff, 2}));
  EXPECT_EQ(last_method_, io::Method::kPreadBuffered);
}

TEST_F(CheckpointStream, PreadDirectIo) {
  stream_to_host(small_slots({io::Backend::kPread, io::DirectIo::kOn, 2}));
  if (!IsSkipped()) {
    EXPECT_EQ(last_method_, io::Method::kPreadDirect);
  }
}

TEST_F(CheckpointStream, IoUringDirectIo) {
  stream_to_host(small_slots({io::Backend::kIoUring, io::DirectIo::kOn, 0}));
  if (!IsSkipped()) {
    EXPECT_EQ(last_method_, io::Method::kIoUringDirect);
  }
}

// No host synchronization in the handler: the blocks are gathered on the
// device, so pinned slots are refilled while copies from them may still be
// queued, and only the slot events keep the bytes intact.
TEST_F(CheckpointStream, AsyncGatherOnTheDevice) {
  std::vector<DeviceBuffer> dest;
  for (const auto& t : kTensors) {
    auto b = DeviceBuffer::allocate(t.bytes, "dest");
    ASSERT_TRUE(b);
    dest.push_back(std::move(*b));
  }
  CheckpointStreamOptions o = small_slots();
  o.slots = 2;
  auto stats = stream_checkpoint_rows(
      path_, kTensors, staging_.as(), kStagingBytes, stream_,
      [&](const StagedRows& r, cudaStream_t s) -> Status {
        const uint64_t row = kTensors[r.tensor].row_bytes;
        if (cudaMemcpyAsync(dest[r.tensor].as<std::byte>() + r.row_begin * row, r.device,
                            (r.row_end - r.row_begin) * row, cudaMemcpyDeviceToDevice,
                            s) != cudaSuccess)
          return make_error(Errc::kInternal, "copy failed");
        return ok();
      },
      o);
  ASSERT_TRUE(stats) << stats.error().to_string();
  for (size_t i = 0; i < kTensors.size(); ++i) {
    std::vector<std::byte> got(kTensors[i].bytes);
    if (!got.empty()) {
      ASSERT_CUDA(cudaMemcpy(got.data(), dest[i].as(), got.size(), cudaMemcpyDeviceToHost));
    }
    EXPECT_TRUE(got == tensor_bytes(i)) << "tensor " << i;
  }
}

TEST_F(CheckpointStream, HandlerErrorStopsTheStream) {
  int calls = 0;
  auto stats = stream_checkpoint_rows(
      path_, kTensors, staging_.as(), kStagingBytes, stream_,
      [&](const StagedRows&, cudaStream_t) -> Status {
        if (++calls == 5) return make_error(Errc::kCancelled, "enough");
        return ok();
      },
      small_slots());
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, Errc::kCancelled);
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(cudaStreamQuery(stream_), cudaSuccess);  // drained before returning
}

TEST_F(CheckpointStream, RefusesRowsLargerThanTheStaging) {
  auto stats = stream_checkpoint_rows(
      path_, kTensors, staging_.as(), 1000, stream_,
      [](const StagedRows&, cudaStream_t) { return ok(); }, small_slots());
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, Errc::kInvalidArgument);
}

TEST_F(CheckpointStream, MissingFile) {
  auto stats = stream_checkpoint_rows(
      dir_.path() / "absent", kTensors, staging_.as(), kStagingBytes, stream_,
      [](const StagedRows&, cudaStream_t) { return ok(); }, small_slots());
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error().code, Errc::kNotFound);
}

// The slots' memory: anonymous huge pages faulted in by several threads,
// then registered with CUDA. Every byte must survive an asynchronous copy to
// the device and back, the partial last huge page included.
TEST(RegisteredHostMemory, CarriesAsyncCopiesBothWays) {
  const size_t bytes = (size_t{37} << 20) + 4096 + 123;
  auto buf = HostBuffer::allocate(bytes, HostMemory::kPinnedRegistered, "test buffer");
  ASSERT_TRUE(buf) << buf.error().to_string();
  EXPECT_TRUE(buf->pinned());
  EXPECT_EQ(buf->bytes(), bytes);
  std::mt19937_64 rng(ringserve::testing::test_seed());
  std::vector<std::byte> want(bytes);
  for (auto& b : want) b = static_cast<std::byte>(rng());
  auto* host = buf->host<std::byte>();
  std::memcpy(host, want.data(), bytes);
  auto dev = DeviceBuffer::allocate(bytes, "test buffer");
  ASSERT_TRUE(dev) << dev.error().to_string();
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ASSERT_CUDA(cudaMemcpyAsync(dev->as(), host, bytes, cudaMemcpyHostToDevice, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  std::memset(host, 0, bytes);
  ASSERT_CUDA(cudaMemcpyAsync(host, dev->as(), bytes, cudaMemcpyDeviceToHost, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  cudaStreamDestroy(stream);
  EXPECT_EQ(std::memcmp(host, want.data(), bytes), 0);
}

}  // namespace
}  // namespace ringserve::cuda
