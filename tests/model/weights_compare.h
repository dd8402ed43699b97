// Bit-exact comparison of two ModelWeights, for round-trip tests.
#pragma once

#include <gtest/gtest.h>

#include "model/layout.h"
#include "model/weights.h"

namespace ringserve::model::test {

inline void expect_linear_eq(const QuantLinear& a, const QuantLinear& b, const std::string& what) {
  EXPECT_EQ(a.rows, b.rows) << what;
  EXPECT_EQ(a.cols, b.cols) << what;
  EXPECT_TRUE(a.q == b.q) << what << ": int8 weights differ";
  EXPECT_TRUE(a.scale == b.scale) << what << ": scales differ";
  EXPECT_TRUE(a.bias == b.bias) << what << ": biases differ";
}

inline void expect_weights_eq(const ModelWeights& a, const ModelWeights& b) {
  EXPECT_EQ(a.config.hidden_size, b.config.hidden_size);
  EXPECT_EQ(a.config.num_layers, b.config.num_layers);
  EXPECT_EQ(a.config.vocab_size, b.config.vocab_size);
  EXPECT_EQ(a.config.bos_token_id, b.config.bos_token_id);
  EXPECT_EQ(a.config.eos_token_ids, b.config.eos_token_ids);
  EXPECT_EQ(a.config.rope_theta, b.config.rope_theta);
  EXPECT_TRUE(a.embed_tokens.bf16 == b.embed_tokens.bf16) << "embeddings differ";
  EXPECT_TRUE(a.final_norm == b.final_norm) << "final norm differs";
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    EXPECT_TRUE(a.layers[l].input_norm == b.layers[l].input_norm) << "layer " << l;
    EXPECT_TRUE(a.layers[l].post_attention_norm == b.layers[l].post_attention_norm)
        << "layer " << l;
    for (const auto& slot : kLayerLinears)
      expect_linear_eq(a.layers[l].*slot.member, b.layers[l].*slot.member,
                       "layer " + std::to_string(l) + " " + slot.name);
  }
  expect_linear_eq(a.lm_head, b.lm_head, "lm_head");
}

}  // namespace ringserve::model::test
