#include "engine/cpu_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/cpu_kernels.h"

namespace ringserve::engine::cpu {
namespace {

// Biases are optional everywhere (QuantLinear's contract), so a model
// without q/k/v biases runs as if they were zero.
Status check_linear(const model::QuantLinear& w, int rows, int cols, const std::string& name) {
  if (w.rows != rows || w.cols != cols) {
    return make_error(Errc::kCorruptData, "{}: shape [{}, {}], the config needs [{}, {}]", name,
                      w.rows, w.cols, rows, cols);
  }
  if (w.q.size() != static_cast<size_t>(rows) * cols ||
      w.scale.size() != static_cast<size_t>(rows)) {
    return make_error(Errc::kCorruptData, "{}: {} weights and {} scales for [{}, {}]", name,
                      w.q.size(), w.scale.size(), rows, cols);
  }
  if (!w.bias.empty() && w.bias.size() != static_cast<size_t>(rows)) {
    return make_error(Errc::kCorruptData, "{}: bias has {} values, want {}", name, w.bias.size(),
                      rows);
  }
  return ok();
}

Status check_vector(const std::vector<float>& v, int size, const std::string& name) {
  if (v.size() != static_cast<size_t>(size)) {
    return make_error(Errc::kCorruptData, "{}: {} values, want {}", name, v.size(), size);
  }
  return ok();
}

Status check_weights(const model::ModelWeights& w) {
  const auto& c = w.config;
  // The invariants the forward pass indexes by (config.validate() checks
  // more, but an engine must not trust its caller to have run it).
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.num_kv_heads <= 0 || c.head_dim <= 0 || c.vocab_size <= 0 ||
      c.num_heads % c.num_kv_heads != 0) {
    return make_error(Errc::kInvalidArgument,
                      "model config: hidden {}, intermediate {}, layers {}, heads {}/{} kv, "
                      "head_dim {}, vocab {} do not describe a Qwen2 model",
                      c.hidden_size, c.intermediate_size, c.num_layers, c.num_heads, c.num_kv_heads,
                      c.head_dim, c.vocab_size);
  }
  if (!(c.rope_theta > 0.0) || !(c.rms_norm_eps > 0.0)) {
    return make_error(Errc::kInvalidArgument, "model config: rope_theta {} and rms_norm_eps {}",
                      c.rope_theta, c.rms_norm_eps);
  }
  if (c.head_dim % 2 != 0) {
    return make_error(Errc::kUnsupported, "head_dim {} is odd: RoPE needs pairs", c.head_dim);
  }
  if (w.embed_tokens.rows != c.vocab_size || w.embed_tokens.cols != c.hidden_size ||
      w.embed_tokens.bf16.size() != static_cast<size_t>(c.vocab_size) * c.hidden_size) {
    return make_error(Errc::kCorruptData,
                      "model.embed_tokens.weight: shape [{}, {}], want [{}, {}]",
                      w.embed_tokens.rows, w.embed_tokens.cols, c.vocab_size, c.hidden_size);
  }
  if (w.layers.size() != static_cast<size_t>(c.num_layers)) {
    return make_error(Errc::kCorruptData, "{} layers, the config says {}", w.layers.size(),
                      c.num_layers);
  }
  for (int i = 0; i < c.num_layers; ++i) {
    const auto& l = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    RS_TRY_STATUS(check_vector(l.input_norm, c.hidden_size, p + "input_layernorm.weight"));
    RS_TRY_STATUS(
        check_vector(l.post_attention_norm, c.hidden_size, p + "post_attention_layernorm.weight"));
    RS_TRY_STATUS(check_linear(l.q_proj, c.q_dim(), c.hidden_size, p + "self_attn.q_proj"));
    RS_TRY_STATUS(check_linear(l.k_proj, c.kv_dim(), c.hidden_size, p + "self_attn.k_proj"));
    RS_TRY_STATUS(check_linear(l.v_proj, c.kv_dim(), c.hidden_size, p + "self_attn.v_proj"));
    RS_TRY_STATUS(check_linear(l.o_proj, c.hidden_size, c.q_dim(), p + "self_attn.o_proj"));
    RS_TRY_STATUS(
        check_linear(l.gate_proj, c.intermediate_size, c.hidden_size, p + "mlp.gate_proj"));
    RS_TRY_STATUS(check_linear(l.up_proj, c.intermediate_size, c.hidden_size, p + "mlp.up_proj"));
    RS_TRY_STATUS(
        check_linear(l.down_proj, c.hidden_size, c.intermediate_size, p + "mlp.down_proj"));
  }
  RS_TRY_STATUS(check_vector(w.final_norm, c.hidden_size, "model.norm.weight"));
  const auto& head = w.lm_head_bf16;
  if (head.rows > 0) {
    if (head.rows != c.vocab_size || head.cols != c.hidden_size ||
        head.bf16.size() != static_cast<size_t>(c.vocab_size) * c.hidden_size) {
      return make_error(Errc::kCorruptData, "lm_head.weight (bf16): shape [{}, {}], want [{}, {}]",
                        head.rows, head.cols, c.vocab_size, c.hidden_size);
    }
  } else if (!c.tie_word_embeddings) {
    RS_TRY_STATUS(check_linear(w.lm_head, c.vocab_size, c.hidden_size, "lm_head"));
  }
  return ok();
}

void grow(std::vector<float>& buffer, size_t size) {
  if (buffer.size() < size) buffer.resize(size);
}

}  // namespace

CpuModel::CpuModel(model::ModelWeights weights, int max_positions, ThreadPool& pool)
    : weights_(std::move(weights)),
      rope_(weights_.config.head_dim, weights_.config.rope_theta, max_positions),
      pool_(&pool) {}

Expected<CpuModel> CpuModel::create(model::ModelWeights weights, int max_positions,
                                    ThreadPool& pool) {
  RS_TRY_STATUS(check_weights(weights));
  if (max_positions <= 0) {
    return make_error(Errc::kInvalidArgument, "max positions must be positive, got {}",
                      max_positions);
  }
  return CpuModel(std::move(weights), max_positions, pool);
}

void CpuModel::forward(std::span<const TokenRow> rows, KvCache& kv, std::vector<float>& logits) {
  const auto wanted =
      std::count_if(rows.begin(), rows.end(), [](const TokenRow& r) { return r.logits; });
  logits.resize(static_cast<size_t>(wanted) * config().vocab_size);
  float* out = logits.data();
  for (size_t begin = 0; begin < rows.size(); begin += kMaxChunkRows) {
    const auto chunk = rows.subspan(begin, std::min<size_t>(kMaxChunkRows, rows.size() - begin));
    forward_chunk(chunk, kv, out);
    out += std::count_if(chunk.begin(), chunk.end(), [](const TokenRow& r) { return r.logits; }) *
           static_cast<size_t>(config().vocab_size);
  }
}

void CpuModel::forward_chunk(std::span<const TokenRow> rows, KvCache& kv, float* logits) {
  const auto& c = config();
  const int n = static_cast<int>(rows.size());
  const int hidden = c.hidden_size, q_dim = c.q_dim(), kv_dim = c.kv_dim();
  const int inter = c.intermediate_size;
  const auto eps = static_cast<float>(c.rms_norm_eps);
  grow(x_, static_cast<size_t>(n) * hidden);
  grow(xn_, static_cast<size_t>(n) * hidden);
  grow(out_, static_cast<size_t>(n) * hidden);
  grow(q_, static_cast<size_t>(n) * q_dim);
  grow(attn_, static_cast<size_t>(n) * q_dim);
  grow(k_, static_cast<size_t>(n) * kv_dim);
  grow(v_, static_cast<size_t>(n) * kv_dim);
  grow(gate_, static_cast<size_t>(n) * inter);
  grow(up_, static_cast<size_t>(n) * inter);

  for (int i = 0; i < n; ++i) {
    weights_.embed_tokens.gather_row(rows[i].token, x_.data() + static_cast<size_t>(i) * hidden);
  }

  for (int layer = 0; layer < c.num_layers; ++layer) {
    const auto& lw = weights_.layers[layer];
    for (int i = 0; i < n; ++i) {
      const size_t o = static_cast<size_t>(i) * hidden;
      rms_norm(x_.data() + o, lw.input_norm.data(), hidden, eps, xn_.data() + o);
    }
    qlinear(lw.q_proj, xn_.data(), n, q_.data(), *pool_);
    qlinear(lw.k_proj, xn_.data(), n, k_.data(), *pool_);
    qlinear(lw.v_proj, xn_.data(), n, v_.data(), *pool_);
    for (int i = 0; i < n; ++i) {
      float* q = q_.data() + static_cast<size_t>(i) * q_dim;
      float* k = k_.data() + static_cast<size_t>(i) * kv_dim;
      rope_.apply(q, c.num_heads, rows[i].pos);
      rope_.apply(k, c.num_kv_heads, rows[i].pos);
      std::copy_n(k, kv_dim, kv.key(rows[i].blocks, layer, rows[i].pos));
      std::copy_n(v_.data() + static_cast<size_t>(i) * kv_dim, kv_dim,
                  kv.value(rows[i].blocks, layer, rows[i].pos));
    }
    attention(rows, kv, layer);
    qlinear(lw.o_proj, attn_.data(), n, out_.data(), *pool_);
    for (size_t i = 0; i < static_cast<size_t>(n) * hidden; ++i) x_[i] += out_[i];

    for (int i = 0; i < n; ++i) {
      const size_t o = static_cast<size_t>(i) * hidden;
      rms_norm(x_.data() + o, lw.post_attention_norm.data(), hidden, eps, xn_.data() + o);
    }
    qlinear(lw.gate_proj, xn_.data(), n, gate_.data(), *pool_);
    qlinear(lw.up_proj, xn_.data(), n, up_.data(), *pool_);
    for (int i = 0; i < n; ++i) {
      const size_t o = static_cast<size_t>(i) * inter;
      silu_mul(gate_.data() + o, up_.data() + o, inter);
    }
    qlinear(lw.down_proj, gate_.data(), n, out_.data(), *pool_);
    for (size_t i = 0; i < static_cast<size_t>(n) * hidden; ++i) x_[i] += out_[i];
  }

  // Only the rows whose logits are wanted pay for the final norm and lm_head.
  int wanted = 0;
  for (int i = 0; i < n; ++i) {
    if (!rows[i].logits) continue;
    rms_norm(x_.data() + static_cast<size_t>(i) * hidden, weights_.final_norm.data(), hidden, eps,
             xn_.data() + static_cast<size_t>(wanted) * hidden);
    ++wanted;
  }
  if (wanted == 0) return;
  if (weights_.lm_head_bf16.rows > 0) {
    bf16_linear(weights_.lm_head_bf16, xn_.data(), wanted, logits, *pool_);
  } else if (c.tie_word_embeddings) {
    bf16_linear(weights_.embed_tokens, xn_.data(), wanted, logits, *pool_);
  } else {
    qlinear(weights_.lm_head, xn_.data(), wanted, logits, *pool_);
  }
}

void CpuModel::attention(std::span<const TokenRow> rows, const KvCache& kv, int layer) {
  const auto& c = config();
  const int heads = c.num_heads, head_dim = c.head_dim, q_dim = c.q_dim();
  const int group = c.num_heads / c.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int64_t tasks = static_cast<int64_t>(rows.size()) * heads;
  pool_->parallel_for(tasks, 4, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scores;
    for (int64_t t = begin; t < end; ++t) {
      const TokenRow& row = rows[t / heads];
      const int h = static_cast<int>(t % heads);
      const int kv_offset = (h / group) * head_dim;
      const float* q = q_.data() + (t / heads) * q_dim + static_cast<size_t>(h) * head_dim;
      float* out = attn_.data() + (t / heads) * q_dim + static_cast<size_t>(h) * head_dim;
      const int len = row.pos + 1;  // causal: positions 0..pos of this sequence
      if (scores.size() < static_cast<size_t>(len)) scores.resize(len);
      float max_score = -INFINITY;
      for (int j = 0; j < len; ++j) {
        scores[j] = dot(q, kv.key(row.blocks, layer, j) + kv_offset, head_dim) * scale;
        max_score = std::max(max_score, scores[j]);
      }
      float sum = 0.0f;
      for (int j = 0; j < len; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      const float inv_sum = 1.0f / sum;
      std::fill_n(out, head_dim, 0.0f);
      for (int j = 0; j < len; ++j) {
        axpy(scores[j] * inv_sum, kv.value(row.blocks, layer, j) + kv_offset, out, head_dim);
      }
    }
  });
}

Expected<std::vector<float>> CpuModel::forward_all_logits(std::span<const int32_t> tokens) {
  const auto& c = config();
  if (tokens.empty() || static_cast<int>(tokens.size()) > max_positions()) {
    return make_error(Errc::kInvalidArgument, "{} tokens, want 1..{}", tokens.size(),
                      max_positions());
  }
  for (int32_t t : tokens) {
    if (t < 0 || t >= c.vocab_size) {
      return make_error(Errc::kInvalidArgument, "token {} outside the vocabulary of {}", t,
                        c.vocab_size);
    }
  }
  const int block_tokens = 16;
  const auto n = static_cast<int64_t>(tokens.size());
  KvCache kv(c.num_layers, c.kv_dim(), block_tokens, KvCache::blocks_for(n, block_tokens));
  std::vector<int32_t> table;
  RS_TRY_STATUS(kv.allocate(kv.blocks_total(), table));
  std::vector<TokenRow> rows(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    rows[i] = TokenRow{table, tokens[i], static_cast<int>(i), true};
  }
  std::vector<float> logits;
  forward(rows, kv, logits);
  return logits;
}

}  // namespace ringserve::engine::cpu
