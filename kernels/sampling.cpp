#include "sampling.h"

#include "cuda_check.h"

namespace ringserve::kernels {

Status sample_tokens(const float* logits, int ld, int batch, int vocab, const SamplingSlot* slots,
                     float* scratch, SampleResult* results, cudaStream_t stream) {
  if (batch <= 0 || vocab <= 0 || ld < vocab)
    return make_error(Errc::kInvalidArgument, "sample_tokens: bad shape batch={} vocab={}", batch,
                      vocab);
  if (!logits || !slots || !scratch || !results)
    return make_error(Errc::kInvalidArgument, "sample_tokens: null pointer");
  CUDA_CHECK(detail::sample_launch(logits, ld, batch, vocab, slots, scratch, results, stream));
  return ok();
}

Status sample_tokens_from_halves(float* logits, int batch, int vocab, const SamplingSlot* slots,
                                 float* scratch, SamplingRowScratch* rows, SampleResult* results,
                                 SampleStrategy strategy, cudaStream_t stream) {
  if (batch <= 0 || vocab <= 0)
    return make_error(Errc::kInvalidArgument,
                      "sample_tokens_from_halves: bad shape batch={} vocab={}", batch, vocab);
  if (!logits || !slots || !scratch || !rows || !results)
    return make_error(Errc::kInvalidArgument, "sample_tokens_from_halves: null pointer");
  CUDA_CHECK(detail::sample_halves_launch(logits, batch, vocab, slots, scratch, rows, results,
                                          strategy, stream));
  return ok();
}

}  // namespace ringserve::kernels
