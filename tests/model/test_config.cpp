#include <gtest/gtest.h>

#include "model/config.h"
#include "model_test_util.h"
#include "support/test_support.h"

namespace ringserve::model {
namespace {

const char* kBase = R"({
  "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 160,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "vocab_size": 1024, "max_position_embeddings": 512, "rms_norm_eps": 1e-5,
  "rope_theta": 500000.0, "bos_token_id": 1, "eos_token_id": 2,
  "tie_word_embeddings": true, "sliding_window": 4096, "use_sliding_window": false
})";

TEST(Config, ParsesTopLevelRopeTheta) {
  auto c = parse_config_json(kBase, "config.json");
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->hidden_size, 64);
  EXPECT_EQ(c->intermediate_size, 160);
  EXPECT_EQ(c->num_layers, 2);
  EXPECT_EQ(c->num_heads, 4);
  EXPECT_EQ(c->num_kv_heads, 2);
  EXPECT_EQ(c->head_dim, 16);  // hidden / heads when absent
  EXPECT_EQ(c->vocab_size, 1024);
  EXPECT_DOUBLE_EQ(c->rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-5);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->bos_token_id, 1);
  EXPECT_EQ(c->eos_token_ids, std::vector<int32_t>{2});
}

TEST(Config, ParsesRopeParametersAndExplicitHeadDim) {
  auto c = parse_config_json(R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 8,
      "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
      "vocab_size": 16, "rope_parameters": {"rope_theta": 1234.5, "rope_type": "default"},
      "eos_token_id": [3, 5, 7]})",
                             "config.json");
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_DOUBLE_EQ(c->rope_theta, 1234.5);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->q_dim(), 128);
  EXPECT_EQ(c->kv_dim(), 64);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{3, 5, 7}));
  EXPECT_FALSE(c->tie_word_embeddings);
}

TEST(Config, FixtureConfigs) {
  for (const char* name : {"models/tiny-qwen2", "models/tiny-qwen2-int8exact"}) {
    auto c = load_config(testing::fixture_path(name));
    ASSERT_TRUE(c) << c.error().to_string();
    EXPECT_EQ(c->hidden_size, 64);
    EXPECT_EQ(c->num_kv_heads, 2);
    EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);
    EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-6);
    EXPECT_FALSE(c->tie_word_embeddings);
    EXPECT_EQ(c->bos_token_id, 1);
    EXPECT_EQ(c->eos_token_ids, std::vector<int32_t>{2});
  }
}

TEST(Config, GenerationConfigOverridesTokenIds) {
  testing::TempDir dir;
  test::write_text(dir.path() / "config.json", kBase);
  test::write_text(dir.path() / "generation_config.json",
                   R"({"bos_token_id": 7, "eos_token_id": [2, 9]})");
  auto c = load_config(dir.path());
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(c->bos_token_id, 7);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{2, 9}));
}

TEST(Config, GenerationConfigWithIdOutsideVocabIsRefused) {
  testing::TempDir dir;
  test::write_text(dir.path() / "config.json", kBase);
  test::write_text(dir.path() / "generation_config.json", R"({"eos_token_id": 5000})");
  auto c = load_config(dir.path());
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("generation_config.json"), std::string::npos)
      << c.error().message;
}

struct BadConfig {
  const char* what;
  const char* json;
  const char* expect_in_message;
};

class ConfigErrors : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigErrors, AreClear) {
  auto c = parse_config_json(GetParam().json, "some/config.json");
  ASSERT_FALSE(c) << GetParam().what;
  EXPECT_NE(c.error().message.find("some/config.json"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find(GetParam().expect_in_message), std::string::npos)
      << c.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, ConfigErrors,
    ::testing::Values(
        BadConfig{"not json", "{", "not valid JSON"}, BadConfig{"array", "[1]", "object"},
        BadConfig{"missing hidden",
                  R"({"model_type":"qwen2","intermediate_size":8,"num_hidden_layers":1,
            "num_attention_heads":2,"vocab_size":16})",
                  "hidden_size"},
        BadConfig{"missing model_type", R"({"hidden_size":8})", "model_type"},
        BadConfig{"llama", R"({"model_type":"llama"})", "llama"},
        BadConfig{"string size", R"({"model_type":"qwen2","hidden_size":"64","intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":2,"vocab_size":16})",
                  "hidden_size"},
        BadConfig{"negative", R"({"model_type":"qwen2","hidden_size":-64,"intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":2,"vocab_size":16})",
                  "hidden_size"},
        BadConfig{"huge", R"({"model_type":"qwen2","hidden_size":99999999999,"intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":2,"vocab_size":16})",
                  "hidden_size"},
        BadConfig{"gqa", R"({"model_type":"qwen2","hidden_size":64,"intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":3,"vocab_size":16})",
                  "num_key_value_heads"},
        BadConfig{"zero heads", R"({"model_type":"qwen2","hidden_size":64,"intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":0,"vocab_size":16})",
                  "num_attention_heads"},
        BadConfig{"eos outside vocab",
                  R"({"model_type":"qwen2","hidden_size":64,"intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":4,"vocab_size":16,"eos_token_id":16})",
                  "eos_token_id"},
        BadConfig{"eos negative", R"({"model_type":"qwen2","hidden_size":64,"intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":4,"vocab_size":16,"eos_token_id":[-1]})",
                  "eos_token_id"},
        BadConfig{"sliding window on",
                  R"({"model_type":"qwen2","hidden_size":64,"intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":4,"vocab_size":16,"use_sliding_window":true})",
                  "sliding"},
        BadConfig{"rope scaling", R"({"model_type":"qwen2","hidden_size":64,"intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":4,"vocab_size":16,"rope_scaling":{"type":"yarn"}})",
                  "rope_scaling"},
        BadConfig{"theta string", R"({"model_type":"qwen2","hidden_size":64,"intermediate_size":8,
            "num_hidden_layers":1,"num_attention_heads":4,"vocab_size":16,"rope_parameters":{"rope_theta":"x"}})",
                  "rope_theta"}));

TEST(Config, MissingFileIsNotFound) {
  testing::TempDir dir;
  auto c = load_config(dir.path());
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, Errc::kNotFound);
  EXPECT_NE(c.error().message.find("config.json"), std::string::npos);
}

TEST(Config, RoundTripsThroughToConfigJson) {
  auto c = parse_config_json(kBase, "config.json");
  ASSERT_TRUE(c);
  auto again = parse_config_json(to_config_json(*c), "again.json");
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->hidden_size, c->hidden_size);
  EXPECT_EQ(again->head_dim, c->head_dim);
  EXPECT_DOUBLE_EQ(again->rope_theta, c->rope_theta);
  EXPECT_DOUBLE_EQ(again->rms_norm_eps, c->rms_norm_eps);
  EXPECT_EQ(again->tie_word_embeddings, c->tie_word_embeddings);
  EXPECT_EQ(again->eos_token_ids, c->eos_token_ids);
  EXPECT_EQ(again->bos_token_id, c->bos_token_id);
}

}  // namespace
}  // namespace ringserve::model
