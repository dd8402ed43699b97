// Plans how a file read in arbitrary chunks becomes whole row blocks in a
// device staging buffer: for every chunk of file bytes, which pieces to copy
// where, and which blocks of rows those copies complete. A consumer (GPU-side
// quantization, say) only ever sees whole rows, however the reader cut the
// file.
//
// Every block starts at staging offset 0: the copies and the consumer run on
// one stream, so a block's consumer is enqueued before the copies of the next
// block and reusing the staging is safe; one stream also means staging space
// beyond one block would buy no overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "io/safetensors_range.h"
#include "ringserve/common/expected.h"

namespace ringserve::io {

struct TensorExtent {
  uint64_t offset = 0;     // absolute file offset
  uint64_t bytes = 0;      // may be 0 (the tensor has no rows)
  uint64_t row_bytes = 0;  // > 0, divides bytes; a 1-D tensor is one row
};

// Copy file bytes [file_offset, file_offset + bytes) to staging + staging_offset.
struct StagePiece {
  size_t tensor = 0;
  uint64_t file_offset = 0;
  uint64_t bytes = 0;
  uint64_t staging_offset = 0;
};

// Rows [row_begin, row_end) of `tensor` are complete at staging + staging_offset.
struct RowBlock {
  size_t tensor = 0;
  uint64_t row_begin = 0;
  uint64_t row_end = 0;
  uint64_t staging_offset = 0;
};

// In the order they must be issued on one stream.
using PlanStep = std::variant<StagePiece, RowBlock>;

class RowBlockPlanner {
 public:
  // `tensors` sorted by offset and non-overlapping; bytes between them are
  // skipped. Each tensor is staged in blocks of floor(staging_bytes /
  // row_bytes) whole rows. Errors (kInvalidArgument): unsorted or
  // overlapping tensors, an extent past 2^64, row_bytes 0 or not dividing
  // bytes, a row larger than the staging.
  static Expected<RowBlockPlanner> create(std::vector<TensorExtent> tensors,
                                          uint64_t staging_bytes);

  // File bytes [file_offset, file_offset + bytes) arrived. The first call may
  // start anywhere up to the first tensor; later calls continue where the
  // previous one ended. Bytes outside every tensor are skipped. Appends to
  // `out` (without clearing it) the pieces to copy and the blocks they
  // complete, in issue order. Errors (kInvalidArgument): a call that does not
  // continue the previous one, or that starts past bytes still needed.
  Status feed(uint64_t file_offset, uint64_t bytes, std::vector<PlanStep>& out);

  bool done() const { return tensor_ == tensors_.size(); }  // every row emitted

  // [first tensor's offset, last tensor's end): what the reader should read.
  ByteRange range() const { return range_; }

  const std::vector<TensorExtent>& tensors() const { return tensors_; }
  uint64_t rows_per_block(size_t tensor) const {
    return staging_bytes_ / tensors_[tensor].row_bytes;
  }

 private:
  // Moves to the next tensor that has rows (or to the end).
  void skip_empty();

  std::vector<TensorExtent> tensors_;
  uint64_t staging_bytes_ = 0;
  ByteRange range_;
  bool started_ = false;
  uint64_t next_ = 0;    // where the next feed must start, once started_
  size_t tensor_ = 0;    // the tensor being staged
  uint64_t row_ = 0;     // first row of the block being staged
  uint64_t filled_ = 0;  // bytes of that block already staged
};

}  // namespace ringserve::io
