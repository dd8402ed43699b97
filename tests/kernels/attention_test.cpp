// Decode attention over a paged KV cache (scattered blocks, split contexts)
// and causal prefill attention, against a double-precision reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "attention.h"
#include "device_buffer.h"
#include "model/rope_frequencies.h"
#include "reference.h"
#include "support/test_support.h"

namespace ringserve::testing {
namespace {

__nv_bfloat16* bf(DeviceBuffer<uint16_t>& b) {
  return reinterpret_cast<__nv_bfloat16*>(b.get());
}

struct Shape {
  int H, KVH, D;
};

// A paged KV cache of random bf16 keys and values for ctx.size() sequences,
// with scattered block tables: a random permutation of the pool.
struct PagedKv {
  static constexpr int kBlockTokens = 16;
  int max_blocks = 0;
  std::vector<int32_t> tables;  // [sequence][max_blocks]
  std::vector<uint16_t> k, v;

  PagedKv(const Shape& s, const std::vector<int>& ctx, std::mt19937_64& rng) {
    const int B = static_cast<int>(ctx.size());
    max_blocks = (*std::max_element(ctx.begin(), ctx.end()) + kBlockTokens - 1) / kBlockTokens + 1;
    const int nblocks = B * max_blocks + 3;
    std::vector<int32_t> perm(nblocks);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    tables.assign(perm.begin(), perm.begin() + static_cast<size_t>(B) * max_blocks);
    const size_t n = static_cast<size_t>(nblocks) * s.KVH * kBlockTokens * s.D;
    k = ref::random_bf16(n, rng);
    v = ref::random_bf16(n, rng);
  }
  int slot(int b, int pos) const {
    return tables[b * max_blocks + pos / kBlockTokens] * kBlockTokens + pos % kBlockTokens;
  }
  // Element offset of the key (or value) at `pos` of sequence b, kv head kvh.
  size_t offset(const Shape& s, int b, int kvh, int pos) const {
    const int sl = slot(b, pos);
    return ((static_cast<size_t>(sl / kBlockTokens) * s.KVH + kvh) * kBlockTokens +
            sl % kBlockTokens) *
           s.D;
  }
};

// A PagedKv on the device with its sequences' context lengths, and the
// cache and shape fields of DecodeAttentionArgs both decode kernels read.
struct DevicePagedKv {
  DevicePagedKv(const PagedKv& kv, const std::vector<int>& ctx)
      : k(kv.k),
        v(kv.v),
        tables(kv.tables),
        lens(std::vector<int32_t>(ctx.begin(), ctx.end())),
        max_blocks(kv.max_blocks),
        batch(static_cast<int>(ctx.size())) {}
  DeviceBuffer<uint16_t> k, v;
  DeviceBuffer<int32_t> tables, lens;
  int max_blocks, batch;

  kernels::DecodeAttentionArgs args(const Shape& s, DeviceBuffer<uint16_t>& out) {
    kernels::DecodeAttentionArgs a;
    a.k_cache = bf(k);
    a.v_cache = bf(v);
    a.block_tables = tables.get();
    a.max_blocks_per_seq = max_blocks;
    a.context_lens = lens.get();
    a.batch = batch;
    a.num_heads = s.H;
    a.num_kv_heads = s.KVH;
    a.head_dim = s.D;
    a.block_tokens = PagedKv::kBlockTokens;
    a.out = bf(out);
    return a;
  }
};

// target_splits > 0: the fused path (context-sized splits merged by the last
// block, kernels::DecodeAttentionArgs::split_counters), launched twice on
// the same counters to check that each launch leaves them at zero.
void check_decode(const Shape& s, const std::vector<int>& ctx, int split_tokens,
                  int target_splits = 0) {
  std::mt19937_64 rng(test_seed() ^ (s.D * 1000 + split_tokens));
  const int B = static_cast<int>(ctx.size());
  const int max_ctx = *std::max_element(ctx.begin(), ctx.end());
  const PagedKv kv(s, ctx, rng);
  auto q = ref::random_bf16(static_cast<size_t>(B) * s.H * s.D, rng);
  const int max_splits = target_splits > 0
                             ? kernels::decode_max_splits(max_ctx, split_tokens, target_splits)
                             : (max_ctx + split_tokens - 1) / split_tokens + 1;

  DevicePagedKv dkv(kv, ctx);
  DeviceBuffer<uint16_t> dq(q), out(static_cast<size_t>(B) * s.H * s.D);
  DeviceBuffer<float> po(static_cast<size_t>(B) * s.H * max_splits * s.D),
      pml(static_cast<size_t>(B) * s.H * max_splits * 2);
  out.poison();
  po.poison();
  pml.poison();
  kernels::DecodeAttentionArgs a = dkv.args(s, out);
  a.q = bf(dq);
  a.split_tokens = split_tokens;
  a.max_splits = max_splits;
  a.partial_o = po.get();
  a.partial_ml = pml.get();
  DeviceBuffer<int32_t> counters(std::vector<int32_t>(static_cast<size_t>(B) * s.KVH, 0));
  if (target_splits > 0) {
    a.split_counters = counters.get();
    a.target_splits = target_splits;
  }
  auto st = kernels::attention_decode(a, nullptr);
  ASSERT_TRUE(st) << st.error().to_string();
  auto o = out.download();
  if (target_splits > 0) {
    EXPECT_EQ(counters.download(), std::vector<int32_t>(static_cast<size_t>(B) * s.KVH, 0));
    out.poison();
    st = kernels::attention_decode(a, nullptr);
    ASSERT_TRUE(st) << st.error().to_string();
    EXPECT_EQ(out.download(), o) << "second launch on the same counters";
    EXPECT_EQ(counters.download(), std::vector<int32_t>(static_cast<size_t>(B) * s.KVH, 0));
  }

  std::vector<double> got, want;
  const int G = s.H / s.KVH;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < s.H; ++h) {
      const int kvh = h / G;
      std::vector<double> qv(s.D);
      for (int d = 0; d < s.D; ++d)
        qv[d] = ref::bf16(q[(static_cast<size_t>(b) * s.H + h) * s.D + d]);
      std::vector<std::vector<double>> K(ctx[b], std::vector<double>(s.D)), V = K;
      for (int j = 0; j < ctx[b]; ++j) {
        const size_t base = kv.offset(s, b, kvh, j);
        for (int d = 0; d < s.D; ++d) {
          K[j][d] = ref::bf16(kv.k[base + d]);
          V[j][d] = ref::bf16(kv.v[base + d]);
        }
      }
      auto r = ref::attend(qv, K, V, ctx[b]);
      for (int d = 0; d < s.D; ++d) {
        want.push_back(r[d]);
        got.push_back(ref::bf16(o[(static_cast<size_t>(b) * s.H + h) * s.D + d]));
      }
    }
  EXPECT_LT(ref::rel_l2(got, want), 1e-2);
}

TEST(AttentionDecode, Qwen7bShapesVariousContexts) {
  check_decode({28, 4, 128}, {1, 77, 700}, 64);
  check_decode({28, 4, 128}, {513, 16, 4096}, 256);
  // The engine's default split (16 keys): 48 splits at the benchmark's 768.
  check_decode({28, 4, 128}, {768, 1, 300, 17}, 16);
}

TEST(AttentionDecode, TinyShapes) {
  check_decode({4, 2, 16}, {1, 2, 31, 200}, 32);
}

// The fused path (the engine's default: minimum split 16, ~32 splits).
TEST(AttentionDecode, FusedQwen7bShapesSplitBoundaries) {
  // One split (1, 15, 16), two (17), 32 of 16 keys (511, 512), 24 of 32
  // (768), 32 of 128 (4096), batch 1 and mixed batches.
  for (int n : {1, 15, 16, 17, 511, 512, 768, 4096}) check_decode({28, 4, 128}, {n}, 16, 32);
  check_decode({28, 4, 128}, {1, 15, 16, 17, 511, 768}, 16, 32);
  check_decode({28, 4, 128}, {513, 16, 4096}, 16, 32);
}

TEST(AttentionDecode, FusedLongContextCappedSplits) {
  // 9000 keys want 288 per split: capped at kAttentionMaxSplitTokens, 36 splits.
  check_decode({28, 4, 128}, {9000, 300}, 16, 32);
}

TEST(AttentionDecode, FusedOtherShapesAndTargets) {
  check_decode({4, 2, 16}, {1, 2, 31, 200}, 16, 32);
  check_decode({4, 2, 16}, {1, 2, 31, 200, 1000}, 32, 4);
  check_decode({8, 1, 256}, {1, 40, 333}, 16, 8);  // group 8, widest head_dim
  check_decode({28, 4, 128}, {700, 77}, 64, 1);    // one split per sequence
}

TEST(AttentionDecode, MaxSplitsBoundsEveryContext) {
  for (int min_split : {1, 16, 64, 256})
    for (int target : {1, 4, 32, 100}) {
      int worst = 0;
      for (int n = 1; n <= 40000; ++n) {
        const int len = kernels::decode_split_tokens(n, min_split, target);
        ASSERT_GE(len, min_split);
        ASSERT_LE(len, kernels::kAttentionMaxSplitTokens);
        worst = std::max(worst, (n + len - 1) / len);
        if (n % 997 == 0 || n == 40000) {
          ASSERT_LE(worst, kernels::decode_max_splits(n, min_split, target))
              << n << " " << min_split << " " << target;
        }
      }
    }
}

TEST(AttentionDecode, RejectsUnsupportedShapes) {
  kernels::DecodeAttentionArgs a;
  a.batch = 1;
  a.num_heads = 28;
  a.num_kv_heads = 2;  // group of 14 > 8
  a.head_dim = 128;
  a.max_splits = 1;
  a.block_tokens = 16;
  a.max_blocks_per_seq = 1;
  EXPECT_FALSE(kernels::attention_decode(a, nullptr));
}

// The fused RoPE + attention kernel (thread block clusters): q and the
// newest key of each sequence rotated from a raw qkv row, that key and its
// value written to the cache (and nothing else in the cache touched), and
// attention over the whole context, against the double reference.
bool clusters_available(int cluster_blocks, const Shape& s) {
  int device = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         kernels::attention_decode_rope_supported(device, cluster_blocks, s.H, s.KVH, s.D);
}

void check_decode_rope(const Shape& s, const std::vector<int>& ctx, int cluster_blocks,
                       bool freq_table = true, int chunk_keys = 64) {
  SCOPED_TRACE(::testing::Message() << "clusters of " << cluster_blocks << ", " << chunk_keys
                                    << "-key chunks, head_dim " << s.D);
  std::mt19937_64 rng(test_seed() ^ (s.D * 7919 + ctx.back()));
  const int B = static_cast<int>(ctx.size()), BT = PagedKv::kBlockTokens;
  const double theta = 10000.0;
  const PagedKv kv(s, ctx, rng);
  const auto& kc = kv.k;
  const auto& vc = kv.v;
  const size_t cache_n = kc.size();
  const int width = (s.H + 2 * s.KVH) * s.D, ld = width + 8;
  const auto qkv = ref::random_f32(static_cast<size_t>(B) * ld, rng, -2.0f, 2.0f);
  std::vector<int32_t> positions(B), slots(B);
  for (int b = 0; b < B; ++b) {
    const int pos = ctx[b] - 1;
    positions[b] = pos;
    slots[b] = kv.slot(b, pos);
  }

  DevicePagedKv dkv(kv, ctx);
  DeviceBuffer<uint16_t> out(static_cast<size_t>(B) * s.H * s.D);
  DeviceBuffer<float> dqkv(qkv), dfreq(model::rope_inv_freq(s.D, theta));
  DeviceBuffer<int32_t> dpos(positions), dslots(slots);
  out.poison();
  kernels::RopeAttentionArgs ra;
  ra.attn = dkv.args(s, out);
  auto& r = ra.rope;
  r.num_heads = s.H;
  r.num_kv_heads = s.KVH;
  r.head_dim = s.D;
  r.rope_theta = static_cast<float>(theta);
  r.inv_freq = freq_table ? dfreq.get() : nullptr;
  r.positions = dpos.get();
  r.slots = dslots.get();
  r.block_tokens = BT;
  r.k_cache = bf(dkv.k);
  r.v_cache = bf(dkv.v);
  ra.qkv = dqkv.get();
  ra.ld_qkv = ld;
  ra.cluster_blocks = cluster_blocks;
  ra.chunk_keys = chunk_keys;
  auto st = kernels::attention_decode_rope(ra, nullptr);
  ASSERT_TRUE(st) << st.error().to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto o = out.download(), k2 = dkv.k.download(), v2 = dkv.v.download();

  // The cache: the new slots hold the rotated key and the value, within
  // bf16 rounding; every other element is untouched.
  std::vector<bool> is_new(cache_n, false);
  std::vector<double> got_kv, want_kv;
  const int G = s.H / s.KVH;
  for (int b = 0; b < B; ++b) {
    const float* row = qkv.data() + static_cast<size_t>(b) * ld;
    for (int kvh = 0; kvh < s.KVH; ++kvh) {
      std::vector<double> kvec(s.D);
      for (int d = 0; d < s.D; ++d) kvec[d] = row[(s.H + kvh) * s.D + d];
      ref::rope(kvec.data(), s.D, positions[b], theta);
      const size_t base = kv.offset(s, b, kvh, positions[b]);
      for (int d = 0; d < s.D; ++d) {
        is_new[base + d] = true;
        got_kv.push_back(ref::bf16(k2[base + d]));
        want_kv.push_back(kvec[d]);
        got_kv.push_back(ref::bf16(v2[base + d]));
        want_kv.push_back(row[(s.H + s.KVH + kvh) * s.D + d]);
      }
    }
  }
  EXPECT_LT(ref::rel_l2(got_kv, want_kv), 5e-3);
  size_t changed = 0;
  for (size_t i = 0; i < cache_n; ++i)
    if (!is_new[i] && (k2[i] != kc[i] || v2[i] != vc[i])) ++changed;
  EXPECT_EQ(changed, 0u) << "cache elements outside the new slots changed";

  std::vector<double> got, want;
  for (int b = 0; b < B; ++b) {
    const float* row = qkv.data() + static_cast<size_t>(b) * ld;
    for (int h = 0; h < s.H; ++h) {
      const int kvh = h / G;
      std::vector<double> qv(s.D);
      for (int d = 0; d < s.D; ++d) qv[d] = row[h * s.D + d];
      ref::rope(qv.data(), s.D, positions[b], theta);
      std::vector<std::vector<double>> K(ctx[b], std::vector<double>(s.D)), V = K;
      for (int j = 0; j < ctx[b]; ++j) {
        const size_t base = kv.offset(s, b, kvh, j);
        for (int d = 0; d < s.D; ++d) {
          K[j][d] = ref::bf16(k2[base + d]);
          V[j][d] = ref::bf16(v2[base + d]);
        }
      }
      const auto want_h = ref::attend(qv, K, V, ctx[b]);
      for (int d = 0; d < s.D; ++d) {
        want.push_back(want_h[d]);
        got.push_back(ref::bf16(o[(static_cast<size_t>(b) * s.H + h) * s.D + d]));
      }
    }
  }
  EXPECT_LT(ref::rel_l2(got, want), 1e-2);

  // Again, with the new keys now in the cache: the same bits (the kernel
  // uses the key it rotated, not what the slot held).
  out.poison();
  ASSERT_TRUE(kernels::attention_decode_rope(ra, nullptr));
  EXPECT_EQ(out.download(), o);
  EXPECT_EQ(dkv.k.download(), k2);
}

#define REQUIRE_CLUSTERS(blocks, shape)                      \
  if (!clusters_available(blocks, shape))                    \
  GTEST_SKIP() << "no thread block clusters of " << (blocks) \
               << " blocks here "                            \
                  "(compute capability 9.0 needed)"

// The chunk sizes `device` runs this shape with: 64 always, 128 where its
// shared memory fits.
std::vector<int> chunk_sizes(int cluster_blocks, const Shape& s) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return {64};
  if (kernels::attention_decode_rope_resident_clusters(device, cluster_blocks, 128, s.H, s.KVH,
                                                       s.D) == 0)
    return {64};
  return {64, 128};
}

TEST(AttentionDecodeRope, Qwen7bShapesContextsAcrossChunks) {
  const Shape qwen{28, 4, 128};
  REQUIRE_CLUSTERS(16, qwen);
  const auto chunks = chunk_sizes(16, qwen);
  EXPECT_EQ(chunks.size(), 2u) << "128-key chunks do not fit the 7B's shape on this GPU";
  // One key; fewer keys than blocks; a 64-key chunk boundary (64 keys a
  // block at 1024, 65 at 1025) and a 128-key one (128 at 2048, 129 at
  // 2049); the benchmark's 512 to 768; several chunks a block (4096: 256
  // keys, 9000: 563), so both shared-memory buffers take turns.
  for (int chunk : chunks) {
    for (int n : {1, 2, 17, 511, 512, 768, 1024, 1025, 2048, 2049, 4096, 9000})
      check_decode_rope(qwen, {n}, 16, true, chunk);
    check_decode_rope(qwen, {1, 700, 77, 4096, 2100}, 16, true, chunk);
  }
}

TEST(AttentionDecodeRope, ClustersOfEight) {
  const Shape qwen{28, 4, 128};
  REQUIRE_CLUSTERS(8, qwen);
  for (int chunk : chunk_sizes(8, qwen)) {
    check_decode_rope(qwen, {1, 9, 513, 768}, 8, true, chunk);
    // Inverse frequencies computed in the kernel.
    check_decode_rope(qwen, {3000}, 8, false, chunk);
  }
}

TEST(AttentionDecodeRope, OtherShapes) {
  REQUIRE_CLUSTERS(16, (Shape{8, 1, 256}));
  check_decode_rope({4, 2, 16}, {1, 2, 31, 200}, 16);
  check_decode_rope({8, 1, 256}, {1, 40, 333, 2000}, 16);  // group 8, widest head_dim
  check_decode_rope({5, 1, 256}, {70}, 8, false);          // group 5
  check_decode_rope({12, 2, 64}, {129, 5}, 16);
  check_decode_rope({6, 6, 64}, {100, 3}, 16);  // one query head per kv head
  // 128-key chunks wherever they fit (not at head_dim 256: 270 KB).
  for (const Shape& s : {Shape{4, 2, 16}, Shape{12, 2, 64}, Shape{6, 6, 64}, Shape{8, 1, 256}})
    if (chunk_sizes(16, s).size() == 2) check_decode_rope(s, {1, 31, 300, 2000}, 16, true, 128);
}

// 128-key chunks only where every cluster of the launch stays resident and
// the launch fills at most half the SMs. The rule is constexpr, checked when
// this file compiles, as the cluster size's.
static_assert(kernels::attention_chunk_keys(4, 16, 132, 7) == 128);  // batch 1, 4 kv heads
static_assert(kernels::attention_chunk_keys(4, 8, 132, 15) == 128);
static_assert(kernels::attention_chunk_keys(16, 8, 132, 16) == 64);  // batch 4: 128 blocks
static_assert(kernels::attention_chunk_keys(8, 16, 132, 8) == 64);   // batch 2: likewise
static_assert(kernels::attention_chunk_keys(8, 8, 132, 7) == 64);    // not all resident
static_assert(kernels::attention_chunk_keys(1, 16, 132, 0) == 64);   // they do not fit at all
TEST(AttentionDecodeRope, ChunkSizeFollowsResidency) {
  const Shape wide{8, 1, 256};
  REQUIRE_CLUSTERS(16, wide);
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  // 64-key chunks of head_dim 256 fit in 227 KB of shared memory, 128-key
  // ones (270 KB) nowhere: refused with an error, and the error is not left
  // for the next launch to report as its own.
  EXPECT_GT(
      kernels::attention_decode_rope_resident_clusters(device, 16, 64, wide.H, wide.KVH, wide.D),
      0);
  EXPECT_EQ(
      kernels::attention_decode_rope_resident_clusters(device, 16, 128, wide.H, wide.KVH, wide.D),
      0);
  kernels::RopeAttentionArgs ra;
  ra.attn.batch = 1;
  ra.attn.num_heads = ra.rope.num_heads = wide.H;
  ra.attn.num_kv_heads = ra.rope.num_kv_heads = wide.KVH;
  ra.attn.head_dim = ra.rope.head_dim = wide.D;
  ra.attn.block_tokens = ra.rope.block_tokens = 16;
  ra.attn.max_blocks_per_seq = 1;
  DeviceBuffer<uint16_t> cache(std::vector<uint16_t>(16 * wide.D, 0)), out(wide.H * wide.D);
  DeviceBuffer<float> qkv(std::vector<float>((wide.H + 2 * wide.KVH) * wide.D, 0.5f));
  DeviceBuffer<int32_t> zero(std::vector<int32_t>{0}), one(std::vector<int32_t>{1});
  ra.attn.k_cache = ra.rope.k_cache = bf(cache);
  ra.attn.v_cache = ra.rope.v_cache = bf(cache);
  ra.attn.block_tables = zero.get();
  ra.attn.context_lens = one.get();
  ra.attn.out = bf(out);
  ra.rope.positions = zero.get();
  ra.rope.slots = zero.get();
  ra.qkv = qkv.get();
  ra.ld_qkv = (wide.H + 2 * wide.KVH) * wide.D;
  ra.chunk_keys = 128;
  EXPECT_FALSE(kernels::attention_decode_rope(ra, nullptr));
  ra.chunk_keys = 64;
  EXPECT_TRUE(kernels::attention_decode_rope(ra, nullptr));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Clusters of 16 while a block per (sequence, kv head, block) fits on the
// SMs, 8 past that. The rule is constexpr: checked when this file compiles
// (CI, without a GPU) as well as when the suite runs.
static_assert(kernels::attention_cluster_blocks(2, 4, 132) == 16);
static_assert(kernels::attention_cluster_blocks(3, 4, 132) == 8);
static_assert(kernels::attention_cluster_blocks(1, 8, 128) == 16);  // exactly one block per SM
TEST(AttentionDecodeRope, ClusterSizeFollowsTheBatch) {
  EXPECT_EQ(kernels::attention_cluster_blocks(1, 4, 132), 16);
  EXPECT_EQ(kernels::attention_cluster_blocks(2, 4, 132), 16);
  EXPECT_EQ(kernels::attention_cluster_blocks(3, 4, 132), 8);
  EXPECT_EQ(kernels::attention_cluster_blocks(4, 4, 132), 8);
  EXPECT_EQ(kernels::attention_cluster_blocks(1, 8, 128), 16);
  EXPECT_EQ(kernels::attention_cluster_blocks(1, 8, 127), 8);
  EXPECT_EQ(kernels::attention_cluster_blocks(64, 8, 132), 8);
}

TEST(AttentionDecodeRope, RejectsMismatchedArguments) {
  kernels::RopeAttentionArgs ra;
  ra.attn.batch = 1;
  ra.attn.num_heads = 28;
  ra.attn.num_kv_heads = 4;
  ra.attn.head_dim = 128;
  ra.attn.block_tokens = 16;
  ra.attn.max_blocks_per_seq = 1;
  ra.rope = {};
  ra.rope.num_heads = 28;
  ra.rope.num_kv_heads = 4;
  ra.rope.head_dim = 64;  // disagrees
  ra.rope.block_tokens = 16;
  auto st = kernels::attention_decode_rope(ra, nullptr);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().to_string().find("disagree"), std::string::npos);
  ra.rope.head_dim = 128;
  ra.cluster_blocks = 4;
  EXPECT_FALSE(kernels::attention_decode_rope(ra, nullptr));
  ra.cluster_blocks = 16;
  ra.chunk_keys = 32;
  EXPECT_FALSE(kernels::attention_decode_rope(ra, nullptr));
  ra.chunk_keys = 64;
  ra.attn.head_dim = ra.rope.head_dim = 72;  // a multiple of 8 (the split path's), not of 16
  st = kernels::attention_decode_rope(ra, nullptr);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().to_string().find("unsupported shape"), std::string::npos);
  EXPECT_FALSE(kernels::attention_decode_rope_supported(0, 16, 28, 4, 72));
}

void check_prefill(const Shape& s, const std::vector<int>& lens) {
  std::mt19937_64 rng(test_seed() ^ s.D);
  const int ntok = std::accumulate(lens.begin(), lens.end(), 0);
  const int max_len = *std::max_element(lens.begin(), lens.end());
  auto q = ref::random_bf16(static_cast<size_t>(ntok) * s.H * s.D, rng);
  auto k = ref::random_bf16(static_cast<size_t>(ntok) * s.KVH * s.D, rng);
  auto v = ref::random_bf16(static_cast<size_t>(ntok) * s.KVH * s.D, rng);
  DeviceBuffer<uint16_t> dq(q), dk(k), dv(v), out(q.size());
  DeviceBuffer<float> scores(static_cast<size_t>(s.H) * max_len * max_len);
  DeviceBuffer<uint16_t> probs(static_cast<size_t>(s.H) * max_len * max_len);
  DeviceBuffer<void*> ptrs(kernels::prefill_pointer_count(s.H, lens.size()));
  out.poison();
  std::vector<int> starts(lens.size());
  for (size_t i = 1; i < lens.size(); ++i) starts[i] = starts[i - 1] + lens[i - 1];
  kernels::PrefillAttentionArgs a;
  a.q = bf(dq);
  a.k = bf(dk);
  a.v = bf(dv);
  a.out = bf(out);
  a.num_heads = s.H;
  a.num_kv_heads = s.KVH;
  a.head_dim = s.D;
  a.nseq = lens.size();
  a.seq_start = starts.data();
  a.seq_len = lens.data();
  a.scores = scores.get();
  a.probs = bf(probs);
  a.pointers = ptrs.get();
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_TRUE(kernels::prefill_attention_prepare(a, nullptr));
  auto st = kernels::attention_prefill(a, h, nullptr);
  ASSERT_TRUE(st) << st.error().to_string();
  auto o = out.download();
  cublasDestroy(h);

  std::vector<double> got, want;
  const int G = s.H / s.KVH;
  for (size_t sq = 0; sq < lens.size(); ++sq)
    for (int t = 0; t < lens[sq]; t += (lens[sq] > 64 ? 5 : 1))
      for (int hh = 0; hh < s.H; ++hh) {
        const int kvh = hh / G;
        const size_t tok = starts[sq] + t;
        std::vector<double> qv(s.D);
        for (int d = 0; d < s.D; ++d) qv[d] = ref::bf16(q[(tok * s.H + hh) * s.D + d]);
        std::vector<std::vector<double>> K(t + 1, std::vector<double>(s.D)), V = K;
        for (int j = 0; j <= t; ++j)
          for (int d = 0; d < s.D; ++d) {
            K[j][d] = ref::bf16(k[((starts[sq] + j) * s.KVH + kvh) * s.D + d]);
            V[j][d] = ref::bf16(v[((starts[sq] + j) * s.KVH + kvh) * s.D + d]);
          }
        auto r = ref::attend(qv, K, V, t + 1);
        for (int d = 0; d < s.D; ++d) {
          want.push_back(r[d]);
          got.push_back(ref::bf16(o[(tok * s.H + hh) * s.D + d]));
        }
      }
  EXPECT_LT(ref::rel_l2(got, want), 1e-2);
}

TEST(AttentionPrefill, Qwen7bShapesTwoSequences) {
  check_prefill({28, 4, 128}, {37, 130});
}
TEST(AttentionPrefill, TinyShapesSingleToken) {
  check_prefill({4, 2, 16}, {1, 9});
}

}  // namespace
}  // namespace ringserve::testing
