#include "attention.h"

#include <algorithm>
#include <cmath>

#include "cuda_check.h"

namespace ringserve::kernels {
namespace {

Status check_prefill(const PrefillAttentionArgs& a) {
  if (a.num_heads <= 0 || a.num_kv_heads <= 0 || a.num_heads % a.num_kv_heads != 0 ||
      a.head_dim <= 0 || a.nseq <= 0)
    return make_error(Errc::kInvalidArgument, "attention_prefill: bad shape");
  if (!a.q || !a.k || !a.v || !a.out || !a.scores || !a.probs || !a.pointers || !a.seq_start ||
      !a.seq_len)
    return make_error(Errc::kInvalidArgument, "attention_prefill: null pointer");
  for (int s = 0; s < a.nseq; ++s)
    if (a.seq_len[s] <= 0 || a.seq_start[s] < 0)
      return make_error(Errc::kInvalidArgument, "attention_prefill: sequence {} is empty", s);
  return ok();
}

// What both decode kernels need of the shape and the paged cache.
bool decode_shape_ok(const DecodeAttentionArgs& a) {
  return a.batch > 0 && a.num_heads > 0 && a.num_kv_heads > 0 &&
         a.num_heads % a.num_kv_heads == 0 && a.num_heads / a.num_kv_heads <= kAttentionMaxGroup &&
         a.head_dim > 0 && a.head_dim % 8 == 0 && a.head_dim <= kAttentionMaxHeadDim &&
         a.block_tokens > 0 && a.max_blocks_per_seq > 0;
}

bool decode_pointers_ok(const DecodeAttentionArgs& a) {
  return a.k_cache && a.v_cache && a.block_tables && a.context_lens && a.out;
}

}  // namespace

Status attention_decode(const DecodeAttentionArgs& a, cudaStream_t stream) {
  if (!decode_shape_ok(a) || a.split_tokens <= 0 || a.split_tokens > kAttentionMaxSplitTokens ||
      a.max_splits <= 0)
    return make_error(Errc::kInvalidArgument,
                      "attention_decode: unsupported shape (H={} KVH={} D={} split={})",
                      a.num_heads, a.num_kv_heads, a.head_dim, a.split_tokens);
  if (!decode_pointers_ok(a) || !a.q || !a.partial_o || !a.partial_ml)
    return make_error(Errc::kInvalidArgument, "attention_decode: null pointer");
  if (a.split_counters && a.target_splits <= 0)
    return make_error(Errc::kInvalidArgument, "attention_decode: target_splits {} <= 0",
                      a.target_splits);
  CUDA_CHECK(detail::attention_decode_launch(a, stream));
  return ok();
}

int attention_decode_rope_resident_clusters(int device, int cluster_blocks, int chunk_keys,
                                            int num_heads, int num_kv_heads, int head_dim) {
  int major = 0, current = 0, clusters = 0;
  if (cluster_blocks != 8 && cluster_blocks != 16) return 0;
  if (chunk_keys != 64 && chunk_keys != 128) return 0;
  if (head_dim % kRopeAttentionHeadDimMultiple != 0) return 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      major < 9)
    return 0;
  if (cudaGetDevice(&current) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) return 0;
  const cudaError_t err = detail::attention_decode_rope_max_clusters(
      cluster_blocks, chunk_keys, num_heads, num_kv_heads, head_dim, &clusters);
  cudaSetDevice(current);
  if (err != cudaSuccess) cudaGetLastError();  // not sticky: clear it for the caller
  return err == cudaSuccess ? clusters : 0;
}

bool attention_decode_rope_supported(int device, int cluster_blocks, int num_heads,
                                     int num_kv_heads, int head_dim) {
  return attention_decode_rope_resident_clusters(device, cluster_blocks, 64, num_heads,
                                                 num_kv_heads, head_dim) > 0;
}

Status attention_decode_rope(const RopeAttentionArgs& ra, cudaStream_t stream) {
  const DecodeAttentionArgs& a = ra.attn;
  const RopeKvArgs& r = ra.rope;
  if (!decode_shape_ok(a) || a.head_dim % kRopeAttentionHeadDimMultiple != 0 ||
      (ra.cluster_blocks != 8 && ra.cluster_blocks != 16) ||
      (ra.chunk_keys != 64 && ra.chunk_keys != 128))
    return make_error(
        Errc::kInvalidArgument,
        "attention_decode_rope: unsupported shape (H={} KVH={} D={} cluster={} chunk={})",
        a.num_heads, a.num_kv_heads, a.head_dim, ra.cluster_blocks, ra.chunk_keys);
  if (r.num_heads != a.num_heads || r.num_kv_heads != a.num_kv_heads || r.head_dim != a.head_dim ||
      r.block_tokens != a.block_tokens || r.k_cache != a.k_cache || r.v_cache != a.v_cache)
    return make_error(Errc::kInvalidArgument,
                      "attention_decode_rope: the RoPE and attention arguments disagree");
  if (!decode_pointers_ok(a) || !ra.qkv || !r.positions || !r.slots)
    return make_error(Errc::kInvalidArgument, "attention_decode_rope: null pointer");
  if (ra.ld_qkv < (a.num_heads + 2 * a.num_kv_heads) * a.head_dim)
    return make_error(Errc::kInvalidArgument, "attention_decode_rope: ld_qkv {} too small",
                      ra.ld_qkv);
  CUDA_CHECK(detail::attention_decode_rope_launch(ra, stream));
  return ok();
}

Status prefill_attention_prepare(const PrefillAttentionArgs& a, cudaStream_t stream) {
  RS_TRY_STATUS(check_prefill(a));
  for (int s = 0; s < a.nseq; ++s) CUDA_CHECK(detail::prefill_pointers_launch(a, s, stream));
  return ok();
}

Status attention_prefill(const PrefillAttentionArgs& a, cublasHandle_t cublas,
                         cudaStream_t stream) {
  RS_TRY_STATUS(check_prefill(a));
  CUBLAS_CHECK(cublasSetStream(cublas, stream));
  const int H = a.num_heads, D = a.head_dim, KVH = a.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float one = 1.0f, zero = 0.0f;
  const int hpp = a.heads_per_pass > 0 ? std::min(a.heads_per_pass, H) : H;
  for (int s = 0; s < a.nseq; ++s) {
    const int T = a.seq_len[s];
    for (int h0 = 0; h0 < H; h0 += hpp) {
      const int nh = std::min(hpp, H - h0);
      void** p = a.pointers + static_cast<size_t>(s) * 6 * H + h0;
      // Row-major S[T][T] = Q[T][D] K[T][D]^T is column-major S^T = K Q^T.
      CUBLAS_CHECK(cublasGemmBatchedEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, T, T, D, &scale, p + 1 * H,
                                       CUDA_R_16BF, KVH * D, p + 0 * H, CUDA_R_16BF, H * D, &zero,
                                       p + 2 * H, CUDA_R_32F, T, nh, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
      CUDA_CHECK(detail::causal_softmax_launch(a.scores, a.probs, T, nh * T, stream));
      // Row-major O[T][D] = P[T][T] V[T][D] is column-major O^T = V^T P^T.
      CUBLAS_CHECK(cublasGemmBatchedEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, D, T, T, &one, p + 4 * H,
                                       CUDA_R_16BF, KVH * D, p + 3 * H, CUDA_R_16BF, T, &zero,
                                       p + 5 * H, CUDA_R_16BF, H * D, nh, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
    }
  }
  return ok();
}

}  // namespace ringserve::kernels
