#include <gtest/gtest.h>

#include "model/manifest.h"
#include "model/synthetic.h"

namespace ringserve::model {
namespace {

TEST(Manifest, DeepSeekR1DistillQwen7bShapeFacts) {
  auto c = builtin_manifest("deepseek-r1-distill-qwen-7b");
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->name, "deepseek-r1-distill-qwen-7b");
  EXPECT_EQ(c->num_layers, 28);
  EXPECT_EQ(c->hidden_size, 3584);
  EXPECT_EQ(c->num_heads, 28);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->intermediate_size, 18944);
  EXPECT_EQ(c->vocab_size, 152064);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_EQ(c->bos_token_id, 151646);  // from generation_config.json
  EXPECT_EQ(c->eos_token_ids, std::vector<int32_t>{151643});
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_EQ(c->max_position_embeddings, 131072);
}

TEST(Manifest, DemoFitsTheQwen2Tokenizer) {
  auto c = builtin_manifest("demo");
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->hidden_size, 256);
  EXPECT_EQ(c->num_layers, 4);
  EXPECT_EQ(c->num_heads, 4);
  EXPECT_EQ(c->num_kv_heads, 2);
  EXPECT_EQ(c->intermediate_size, 704);
  EXPECT_EQ(c->vocab_size, 151936);
}

TEST(Manifest, UnknownNameListsKnownOnes) {
  auto c = builtin_manifest("gpt-5");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, Errc::kNotFound);
  EXPECT_NE(c.error().message.find("deepseek-r1-distill-qwen-7b"), std::string::npos);
}

TEST(SyntheticSpec, ParsesOverrides) {
  auto s = parse_synthetic_spec("deepseek-r1-distill-qwen-7b,layers=2,seed=42");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->config.num_layers, 2);
  EXPECT_EQ(s->config.hidden_size, 3584);
  ASSERT_TRUE(s->seed.has_value());
  EXPECT_EQ(*s->seed, 42u);
}

TEST(SyntheticSpec, RejectsBadOverrides) {
  for (const char* bad : {"demo,layers=0", "demo,layers=x", "demo,layers", "demo,colour=3",
                          "demo,seed=-1", "nope", ""}) {
    EXPECT_FALSE(parse_synthetic_spec(bad)) << bad;
  }
}

}  // namespace
}  // namespace ringserve::model
