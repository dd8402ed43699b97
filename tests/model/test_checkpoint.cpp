#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model/checkpoint.h"
#include "model/layout.h"
#include "model/loader.h"
#include "model/synthetic.h"
#include "model_test_util.h"
#include "support/test_support.h"
#include "weights_compare.h"

namespace ringserve::model {
namespace {

TEST(Checkpoint, ConvertThenLoadEqualsDirectLoad) {
  for (const char* name : {"tiny-qwen2", "tiny-qwen2-int8exact"}) {
    auto direct = load_model(testing::fixture_path(std::string("models/") + name).string(), {});
    ASSERT_TRUE(direct) << direct.error().to_string();
    testing::TempDir out;
    ASSERT_TRUE(save_quantized_checkpoint(*direct, out.path()));
    auto src = TensorSource::open_dir(out.path());
    ASSERT_TRUE(src);
    EXPECT_TRUE(is_ringserve_checkpoint(*src));
    EXPECT_EQ(src->metadata().at("version"), "1");
    auto q = src->get("model.layers.0.self_attn.q_proj.weight");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->dtype, DType::kI8);
    auto s = src->get("model.layers.0.self_attn.q_proj.weight_scale");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->dtype, DType::kF32);
    EXPECT_EQ(src->get(kEmbedName)->dtype, DType::kBF16);

    LoadStats stats;
    LoadOptions options;
    options.stats = &stats;
    auto again = load_model(out.path().string(), options);
    ASSERT_TRUE(again) << again.error().to_string();
    EXPECT_EQ(stats.format, "ringserve-int8");
    test::expect_weights_eq(*direct, *again);
  }
}

TEST(Checkpoint, SyntheticTiedModelRoundTrips) {
  auto spec = parse_synthetic_spec("demo,layers=1");
  ASSERT_TRUE(spec);
  spec->config.tie_word_embeddings = true;
  spec->config.vocab_size = 1000;
  spec->config.eos_token_ids = {2};
  spec->config.bos_token_id = 1;
  auto w = make_synthetic_weights(spec->config, 4, 2);
  ASSERT_TRUE(w);
  testing::TempDir out;
  ASSERT_TRUE(save_quantized_checkpoint(*w, out.path()));
  auto again = load_model(out.path().string(), {});
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_TRUE(again->config.tie_word_embeddings);
  test::expect_weights_eq(*w, *again);
}

TEST(Checkpoint, RefusesInconsistentWeights) {
  auto spec = parse_synthetic_spec("demo,layers=1");
  ASSERT_TRUE(spec);
  spec->config.vocab_size = 300;
  spec->config.eos_token_ids = {2};
  spec->config.bos_token_id = 1;
  auto w = make_synthetic_weights(spec->config, 4, 2);
  ASSERT_TRUE(w);
  w->layers[0].k_proj.bias.clear();
  testing::TempDir out;
  EXPECT_FALSE(save_quantized_checkpoint(*w, out.path()));
}

TEST(Checkpoint, TamperedScaleIsRefused) {
  auto direct = load_model(testing::fixture_path("models/tiny-qwen2").string(), {});
  ASSERT_TRUE(direct);
  for (float bad : {std::nanf(""), -1.0f, INFINITY}) {
    direct->layers[1].o_proj.scale[5] = bad;
    testing::TempDir out;
    ASSERT_TRUE(save_quantized_checkpoint(*direct, out.path()));
    auto again = load_model(out.path().string(), {});
    ASSERT_FALSE(again);
    EXPECT_NE(again.error().message.find(
                  "tensor model.layers.1.self_attn.o_proj.weight_scale: scale of row 5"),
              std::string::npos)
        << again.error().message;
  }
}

TEST(Checkpoint, Int8TensorWithWrongShapeIsRefused) {
  auto direct = load_model(testing::fixture_path("models/tiny-qwen2").string(), {});
  ASSERT_TRUE(direct);
  testing::TempDir out;
  ASSERT_TRUE(save_quantized_checkpoint(*direct, out.path()));
  // Same file, config claiming a wider MLP.
  std::string config = testing::read_file(out.path() / "config.json");
  auto pos = config.find("\"intermediate_size\": 160");
  ASSERT_NE(pos, std::string::npos);
  config.replace(pos, 24, "\"intermediate_size\": 192");
  test::write_text(out.path() / "config.json", config);
  auto again = load_model(out.path().string(), {});
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find(
                "model.safetensors: tensor model.layers.0.mlp.gate_proj.weight: shape"),
            std::string::npos)
      << again.error().message;
}

}  // namespace
}  // namespace ringserve::model
