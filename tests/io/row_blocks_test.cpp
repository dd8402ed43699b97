// The row block planner against a simulated staging buffer: however the file
// is cut into chunks, the pieces it plans must put exactly a tensor's rows
// where each block says, every row once and in order, gaps untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "io/row_blocks.h"
#include "support/test_support.h"

namespace ringserve::io {
namespace {

struct Layout {
  std::vector<TensorExtent> tensors;
  uint64_t staging = 0;
  uint64_t file_size = 0;
};

Layout random_layout(std::mt19937_64& rng) {
  auto pick = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  Layout l;
  uint64_t at = pick(0, 40);
  uint64_t max_row = 1;
  const uint64_t n = pick(0, 6);
  for (uint64_t i = 0; i < n; ++i) {
    if (pick(0, 1)) at += pick(1, 50);  // a gap
    const uint64_t row_bytes = pick(1, 48);
    const uint64_t rows = pick(0, 4) == 0 ? 0 : pick(1, 30);
    l.tensors.push_back({at, rows * row_bytes, row_bytes});
    at += rows * row_bytes;
    max_row = std::max(max_row, row_bytes);
  }
  l.staging = pick(max_row, max_row * 5 + 7);
  l.file_size = at + pick(0, 40);
  return l;
}

// Feeds [start, end) in random chunks, applying the plan to a staging buffer.
void check_plan(const Layout& l, uint64_t start, uint64_t end, uint64_t max_chunk,
                std::mt19937_64& rng) {
  std::vector<std::byte> file(l.file_size);
  for (auto& b : file) b = static_cast<std::byte>(rng());
  auto planner = RowBlockPlanner::create(l.tensors, l.staging);
  ASSERT_TRUE(planner) << planner.error().to_string();

  constexpr std::byte kPoison{0xEE};
  std::vector<std::byte> staging(l.staging, kPoison);
  std::vector<uint64_t> next_row(l.tensors.size(), 0);
  size_t last_tensor = 0;
  std::vector<PlanStep> steps;
  for (uint64_t at = start; at < end;) {
    const uint64_t len =
        std::min(end - at, std::uniform_int_distribution<uint64_t>(1, max_chunk)(rng));
    steps.clear();
    ASSERT_TRUE(planner->feed(at, len, steps));
    for (const PlanStep& step : steps) {
      if (const auto* p = std::get_if<StagePiece>(&step)) {
        ASSERT_LT(p->tensor, l.tensors.size());
        const TensorExtent& t = l.tensors[p->tensor];
        ASSERT_GT(p->bytes, 0u);
        ASSERT_GE(p->file_offset, at);  // inside this chunk
        ASSERT_LE(p->file_offset + p->bytes, at + len);
        ASSERT_GE(p->file_offset, t.offset);  // inside its tensor: gaps are never copied
        ASSERT_LE(p->file_offset + p->bytes, t.offset + t.bytes);
        ASSERT_LE(p->staging_offset + p->bytes, l.staging);
        std::memcpy(staging.data() + p->staging_offset, file.data() + p->file_offset, p->bytes);
        continue;
      }
      const auto& b = std::get<RowBlock>(step);
      ASSERT_LT(b.tensor, l.tensors.size());
      const TensorExtent& t = l.tensors[b.tensor];
      const uint64_t rows = t.bytes / t.row_bytes;
      ASSERT_GE(b.tensor, last_tensor);  // tensors in order
      for (size_t i = last_tensor; i < b.tensor; ++i)
        ASSERT_EQ(next_row[i] * l.tensors[i].row_bytes, l.tensors[i].bytes) << "tensor " << i;
      last_tensor = b.tensor;
      ASSERT_EQ(b.row_begin, next_row[b.tensor]);  // each row once, in order
      ASSERT_EQ(b.row_end, std::min(rows, b.row_begin + l.staging / t.row_bytes));
      const uint64_t n = (b.row_end - b.row_begin) * t.row_bytes;
      ASSERT_LE(b.staging_offset + n, l.staging);
      ASSERT_EQ(0, std::memcmp(staging.data() + b.staging_offset,
                               file.data() + t.offset + b.row_begin * t.row_bytes, n))
          << "tensor " << b.tensor << " rows " << b.row_begin << ".." << b.row_end;
      next_row[b.tensor] = b.row_end;
      // The next block must be built from pieces planned after this one.
      std::fill(staging.begin(), staging.end(), kPoison);
    }
    at += len;
    if (at < planner->range().offset + planner->range().length) {
      bool rows_left = false;
      for (size_t i = 0; i < l.tensors.size(); ++i)
        rows_left |= next_row[i] * l.tensors[i].row_bytes < l.tensors[i].bytes;
      ASSERT_EQ(planner->done(), !rows_left);
    }
  }
  EXPECT_TRUE(planner->done());
  for (size_t i = 0; i < l.tensors.size(); ++i)
    EXPECT_EQ(next_row[i] * l.tensors[i].row_bytes, l.tensors[i].bytes) << "tensor " << i;
}

TEST(RowBlocks, RandomLayoutsAndChunkings) {
  std::mt19937_64 rng(ringserve::testing::test_seed());
  for (int iter = 0; iter < 3000; ++iter) {
    SCOPED_TRACE(iter);
    const Layout l = random_layout(rng);
    auto planner = RowBlockPlanner::create(l.tensors, l.staging);
    ASSERT_TRUE(planner) << planner.error().to_string();
    const ByteRange r = planner->range();
    if (!l.tensors.empty()) {
      EXPECT_EQ(r.offset, l.tensors.front().offset);
      EXPECT_EQ(r.offset + r.length, l.tensors.back().offset + l.tensors.back().bytes);
    }
    const uint64_t max_chunk = std::uniform_int_distribution<uint64_t>(1, 2 * l.staging + 64)(rng);
    // Exactly the range, or from the start of the file to its end (leading
    // and trailing bytes are gaps too).
    if (iter % 2 == 0)
      check_plan(l, r.offset, r.offset + r.length, max_chunk, rng);
    else
      check_plan(l, 0, l.file_size, max_chunk, rng);
    if (HasFatalFailure()) return;
  }
}

TEST(RowBlocks, OneChunkAndOneByteChunks) {
  std::mt19937_64 rng(7);
  const Layout l{{{3, 5 * 7, 7}, {40, 12, 12}, {60, 0, 4}, {70, 9 * 10, 9}}, 20, 200};
  check_plan(l, 0, l.file_size, l.file_size, rng);
  check_plan(l, 0, l.file_size, 1, rng);
}

TEST(RowBlocks, BlocksHoldAsManyWholeRowsAsFit) {
  auto planner = RowBlockPlanner::create({{0, 10 * 30, 30}}, 100);  // 3 rows a block
  ASSERT_TRUE(planner);
  std::vector<PlanStep> steps;
  ASSERT_TRUE(planner->feed(0, 300, steps));
  std::vector<std::pair<uint64_t, uint64_t>> blocks;
  for (const auto& s : steps)
    if (const auto* b = std::get_if<RowBlock>(&s)) blocks.emplace_back(b->row_begin, b->row_end);
  EXPECT_EQ(blocks, (std::vector<std::pair<uint64_t, uint64_t>>{{0, 3}, {3, 6}, {6, 9}, {9, 10}}));
  EXPECT_TRUE(planner->done());
}

TEST(RowBlocks, NoTensorsIsDone) {
  auto planner = RowBlockPlanner::create({}, 16);
  ASSERT_TRUE(planner);
  EXPECT_TRUE(planner->done());
  EXPECT_EQ(planner->range().length, 0u);
  std::vector<PlanStep> steps;
  EXPECT_TRUE(planner->feed(0, 100, steps));
  EXPECT_TRUE(steps.empty());
}

void expect_invalid(std::vector<TensorExtent> tensors, uint64_t staging) {
  auto planner = RowBlockPlanner::create(std::move(tensors), staging);
  ASSERT_FALSE(planner);
  EXPECT_EQ(planner.error().code, Errc::kInvalidArgument) << planner.error().to_string();
}

TEST(RowBlocks, RefusesBadLayouts) {
  expect_invalid({{0, 100, 10}, {90, 10, 10}}, 64);  // overlap
  expect_invalid({{100, 10, 10}, {0, 10, 10}}, 64);  // unsorted
  expect_invalid({{0, 100, 0}}, 64);                 // row_bytes 0
  expect_invalid({{0, 100, 30}}, 64);                // 30 does not divide 100
  expect_invalid({{0, 100, 100}}, 99);               // a row larger than the staging
  expect_invalid({{0, 10, 10}}, 0);                  // no staging
  expect_invalid({{~uint64_t{0} - 4, 10, 10}}, 64);  // past 2^64
  EXPECT_TRUE(RowBlockPlanner::create({{0, 100, 10}, {100, 10, 10}}, 10));  // adjacent, exact fit
}

TEST(RowBlocks, RefusesFeedsThatSkipBytes) {
  std::vector<PlanStep> steps;
  auto late = RowBlockPlanner::create({{10, 100, 10}}, 64);
  ASSERT_TRUE(late);
  auto st = late->feed(11, 50, steps);  // starts past the first tensor byte
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::kInvalidArgument);

  auto hole = RowBlockPlanner::create({{10, 100, 10}}, 64);
  ASSERT_TRUE(hole);
  ASSERT_TRUE(hole->feed(10, 20, steps));
  st = hole->feed(31, 20, steps);  // byte 30 never arrived
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::kInvalidArgument);
}

}  // namespace
}  // namespace ringserve::io
