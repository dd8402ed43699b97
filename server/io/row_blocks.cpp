#include "io/row_blocks.h"

#include <algorithm>
#include <limits>

namespace ringserve::io {

Expected<RowBlockPlanner> RowBlockPlanner::create(std::vector<TensorExtent> tensors,
                                                  uint64_t staging_bytes) {
  uint64_t prev_end = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorExtent& t = tensors[i];
    if (t.row_bytes == 0 || t.bytes % t.row_bytes != 0)
      return make_error(Errc::kInvalidArgument,
                        "tensor {}: {} bytes are not a whole number of {}-byte rows", i, t.bytes,
                        t.row_bytes);
    if (t.row_bytes > staging_bytes)
      return make_error(Errc::kInvalidArgument,
                        "tensor {}: a {}-byte row does not fit the {}-byte staging buffer", i,
                        t.row_bytes, staging_bytes);
    if (t.bytes > std::numeric_limits<uint64_t>::max() - t.offset)
      return make_error(Errc::kInvalidArgument, "tensor {}: extent past 2^64 bytes", i);
    if (i > 0 && t.offset < prev_end)
      return make_error(Errc::kInvalidArgument,
                        "tensor {} at offset {} starts before the previous one ends ({}): "
                        "tensors must be sorted and must not overlap",
                        i, t.offset, prev_end);
    prev_end = t.offset + t.bytes;
  }
  RowBlockPlanner p;
  p.tensors_ = std::move(tensors);
  p.staging_bytes_ = staging_bytes;
  if (!p.tensors_.empty())
    p.range_ = {p.tensors_.front().offset, prev_end - p.tensors_.front().offset};
  p.skip_empty();
  return p;
}

void RowBlockPlanner::skip_empty() {
  while (tensor_ < tensors_.size() && tensors_[tensor_].bytes == 0) ++tensor_;
}

Status RowBlockPlanner::feed(uint64_t file_offset, uint64_t bytes, std::vector<PlanStep>& out) {
  if (bytes > std::numeric_limits<uint64_t>::max() - file_offset)
    return make_error(Errc::kInvalidArgument, "feed at {}: {} bytes run past 2^64", file_offset,
                      bytes);
  if (started_ && file_offset != next_)
    return make_error(Errc::kInvalidArgument, "feed at {}: the previous one ended at {}",
                      file_offset, next_);
  if (!started_ && !done()) {
    const TensorExtent& t = tensors_[tensor_];
    if (file_offset > t.offset)
      return make_error(Errc::kInvalidArgument, "feed at {}: tensor {} starts earlier, at {}",
                        file_offset, tensor_, t.offset);
  }
  started_ = true;
  next_ = file_offset + bytes;

  uint64_t cur = file_offset;
  const uint64_t end = file_offset + bytes;
  while (cur < end && !done()) {
    const TensorExtent& t = tensors_[tensor_];
    if (cur < t.offset) {  // a gap
      cur = std::min(end, t.offset);
      continue;
    }
    const uint64_t rows = t.bytes / t.row_bytes;
    const uint64_t block_rows = std::min(rows_per_block(tensor_), rows - row_);
    const uint64_t block_bytes = block_rows * t.row_bytes;
    const uint64_t take = std::min(end - cur, block_bytes - filled_);
    out.emplace_back(StagePiece{tensor_, cur, take, filled_});
    cur += take;
    filled_ += take;
    if (filled_ < block_bytes) break;  // cur == end
    out.emplace_back(RowBlock{tensor_, row_, row_ + block_rows, 0});
    row_ += block_rows;
    filled_ = 0;
    if (row_ == rows) {
      row_ = 0;
      ++tensor_;
      skip_empty();
    }
  }
  return ok();
}

}  // namespace ringserve::io
