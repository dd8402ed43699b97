#include "rope_kv.h"

#include "cuda_check.h"

namespace ringserve::kernels {
namespace {

Status check(const RopeKvArgs& a, int ld_qkv) {
  if (a.ntok <= 0 || a.num_heads <= 0 || a.num_kv_heads <= 0 || a.head_dim <= 0 ||
      a.head_dim % 2 != 0 || a.head_dim > 256 || a.block_tokens <= 0)
    return make_error(Errc::kInvalidArgument, "rope_kv_write: bad shape");
  if (ld_qkv < (a.num_heads + 2 * a.num_kv_heads) * a.head_dim)
    return make_error(Errc::kInvalidArgument, "rope_kv_write: ld_qkv {} too small", ld_qkv);
  if (!a.positions || !a.slots || !a.q_out || !a.k_cache || !a.v_cache)
    return make_error(Errc::kInvalidArgument, "rope_kv_write: null pointer");
  return ok();
}

}  // namespace

Status rope_kv_write(const float* qkv, int ld_qkv, const RopeKvArgs& args, cudaStream_t stream) {
  RS_TRY_STATUS(check(args, ld_qkv));
  CUDA_CHECK(detail::rope_kv_launch(qkv, ld_qkv, nullptr, nullptr, args, stream));
  return ok();
}

Status rope_kv_write(const float* qkv, int ld_qkv, const float* scale, const float* bias,
                     const RopeKvArgs& args, cudaStream_t stream) {
  RS_TRY_STATUS(check(args, ld_qkv));
  if (!scale) return make_error(Errc::kInvalidArgument, "rope_kv_write: raw input needs scales");
  CUDA_CHECK(detail::rope_kv_launch(qkv, ld_qkv, scale, bias, args, stream));
  return ok();
}

}  // namespace ringserve::kernels
