#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "model/layout.h"
#include "model/loader.h"
#include "model/quantize.h"
#include "model/safetensors_writer.h"
#include "model/synthetic.h"
#include "model_test_util.h"
#include "support/test_support.h"
#include "weights_compare.h"

namespace ringserve::model {
namespace {

std::string fixture(const char* name) {
  return testing::fixture_path(std::string("models/") + name).string();
}

TEST(Loader, LoadsBothFixtureModels) {
  for (const char* name : {"tiny-qwen2", "tiny-qwen2-int8exact"}) {
    LoadStats stats;
    LoadOptions options;
    options.stats = &stats;
    auto w = load_model(fixture(name), options);
    ASSERT_TRUE(w) << w.error().to_string();
    const auto& c = w->config;
    EXPECT_EQ(c.name, name);
    ASSERT_EQ(w->layers.size(), 2u);
    EXPECT_EQ(w->embed_tokens.rows, 1024);
    EXPECT_EQ(w->embed_tokens.cols, 64);
    EXPECT_EQ(w->lm_head.rows, 1024);
    EXPECT_EQ(w->lm_head.cols, 64);
    EXPECT_EQ(w->final_norm.size(), 64u);
    const auto& l0 = w->layers[0];
    EXPECT_EQ(l0.q_proj.rows, 64);
    EXPECT_EQ(l0.k_proj.rows, 32);
    EXPECT_EQ(l0.v_proj.bias.size(), 32u);
    EXPECT_TRUE(l0.o_proj.bias.empty());
    EXPECT_EQ(l0.gate_proj.rows, 160);
    EXPECT_EQ(l0.down_proj.cols, 160);
    EXPECT_EQ(stats.format, "hf-BF16");
    EXPECT_GT(stats.source_bytes, 400000u);
    // linear bytes: 2 layers of q,k,v,o,gate,up,down + lm_head, int8 + fp32 scales
    size_t per_layer =
        (64 * 64 + 32 * 64 * 2 + 64 * 64 + 160 * 64 * 3) + 4 * (64 + 32 + 32 + 64 + 160 * 2 + 64);
    EXPECT_EQ(w->linear_bytes(), 2 * per_layer + 1024 * 64 + 1024 * 4);

    // Spot-check against the raw file: the embedding is copied bit for bit,
    // norms and biases are the bf16 values widened.
    auto src = TensorSource::open_dir(fixture(name));
    ASSERT_TRUE(src);
    auto embed = src->get(kEmbedName);
    ASSERT_TRUE(embed);
    EXPECT_EQ(std::memcmp(embed->bytes.data(), w->embed_tokens.bf16.data(), embed->bytes.size()),
              0);
    auto bias = src->get("model.layers.1.self_attn.q_proj.bias");
    ASSERT_TRUE(bias);
    for (int i = 0; i < 64; ++i)
      EXPECT_EQ(w->layers[1].q_proj.bias[i], load_float(DType::kBF16, bias->bytes.data(), i));
    auto head = quantize_linear(*src->find(kLmHeadName), 1);
    ASSERT_TRUE(head);
    test::expect_linear_eq(*head, w->lm_head, "lm_head");
  }
}

TEST(Loader, ThreadCountDoesNotChangeTheWeights) {
  LoadOptions one, many;
  one.threads = 1;
  many.threads = 5;
  auto a = load_model(fixture("tiny-qwen2"), one);
  auto b = load_model(fixture("tiny-qwen2"), many);
  ASSERT_TRUE(a && b);
  test::expect_weights_eq(*a, *b);
}

// A copy of the fixture model with a modified config or file.
class BrokenModel : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::copy(fixture("tiny-qwen2"), dir_.path(),
                          std::filesystem::copy_options::recursive);
  }
  void set_config(const std::string& from, const std::string& to) {
    std::string text = testing::read_file(dir_.path() / "config.json");
    auto pos = text.find(from);
    ASSERT_NE(pos, std::string::npos);
    text.replace(pos, from.size(), to);
    test::write_text(dir_.path() / "config.json", text);
  }
  // Rewrites model.safetensors through our writer, letting `edit` change the
  // declarations (and thus the bytes each tensor gets).
  void rewrite(const std::function<void(std::vector<TensorDecl>&)>& edit) {
    std::vector<TensorDecl> decls;
    std::vector<std::vector<std::byte>> data;
    {
      auto src = TensorSource::open_dir(dir_.path());
      ASSERT_TRUE(src);
      for (const auto& v : src->tensors()) {
        decls.push_back(
            {std::string(v.name), v.dtype, std::vector<int64_t>(v.shape.begin(), v.shape.end())});
        data.emplace_back(v.bytes.begin(), v.bytes.end());
      }
    }
    edit(decls);
    auto w =
        SafetensorsWriter::create(dir_.path() / "model.safetensors", decls, {{"format", "pt"}});
    ASSERT_TRUE(w);
    for (size_t i = 0; i < decls.size(); ++i) {
      uint64_t n = dtype_size(decls[i].dtype);
      for (int64_t d : decls[i].shape) n *= static_cast<uint64_t>(d);
      data[i].resize(n);
      ASSERT_TRUE(w->write_tensor(decls[i].name, data[i]));
    }
    ASSERT_TRUE(w->finish());
  }
  Error load_error() {
    auto w = load_model(dir_.path().string(), {});
    EXPECT_FALSE(w);
    return w ? Error{} : w.error();
  }
  testing::TempDir dir_;
};

TEST_F(BrokenModel, ConfigShapeMismatchNamesFileAndTensor) {
  set_config("\"intermediate_size\": 160", "\"intermediate_size\": 128");
  Error e = load_error();
  EXPECT_EQ(e.code, Errc::kCorruptData);
  EXPECT_NE(e.message.find(
                "model.safetensors: tensor model.layers.0.mlp.gate_proj.weight: shape [160, 64]"),
            std::string::npos)
      << e.message;
  EXPECT_NE(e.message.find("[128, 64]"), std::string::npos) << e.message;
}

TEST_F(BrokenModel, VocabMismatch) {
  set_config("\"vocab_size\": 1024", "\"vocab_size\": 2048");
  Error e = load_error();
  EXPECT_NE(e.message.find("tensor model.embed_tokens.weight"), std::string::npos) << e.message;
}

TEST_F(BrokenModel, MissingTensor) {
  rewrite([](std::vector<TensorDecl>& d) {
    std::erase_if(
        d, [](const TensorDecl& t) { return t.name == "model.layers.1.self_attn.k_proj.bias"; });
  });
  Error e = load_error();
  EXPECT_EQ(e.code, Errc::kNotFound);
  EXPECT_NE(
      e.message.find("model.safetensors: tensor model.layers.1.self_attn.k_proj.bias: missing"),
      std::string::npos)
      << e.message;
}

TEST_F(BrokenModel, IntegerDtypeForAFloatTensor) {
  rewrite([](std::vector<TensorDecl>& d) {
    for (auto& t : d)
      if (t.name == "model.norm.weight") t.dtype = DType::kI16;
  });
  Error e = load_error();
  EXPECT_NE(e.message.find("tensor model.norm.weight: dtype I16"), std::string::npos) << e.message;
}

TEST_F(BrokenModel, NonFiniteWeightNamesTensorAndRow) {
  auto bytes = testing::read_file(dir_.path() / "model.safetensors");
  auto header = parse_safetensors_header(std::as_bytes(std::span<const char>(bytes)), bytes.size(),
                                         "model.safetensors");
  ASSERT_TRUE(header);
  size_t offset = 0;
  for (const auto& t : header->tensors)
    if (t.name == "model.layers.0.mlp.up_proj.weight")
      offset = header->data_offset + t.begin + 3 * 64 * 2;
  ASSERT_GT(offset, 0u);
  // Row 3, column 0 becomes +inf (bf16 0x7f80, little-endian).
  bytes[offset] = static_cast<char>(0x80);
  bytes[offset + 1] = static_cast<char>(0x7f);
  test::write_text(dir_.path() / "model.safetensors", bytes);
  Error e = load_error();
  EXPECT_EQ(e.code, Errc::kCorruptData);
  EXPECT_NE(e.message.find("tensor model.layers.0.mlp.up_proj.weight: row 3"), std::string::npos)
      << e.message;
}

TEST(Loader, BadSpecs) {
  auto w = load_model("/nonexistent/model/dir", {});
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, Errc::kNotFound);
  w = load_model("synthetic:no-such-model", {});
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, Errc::kNotFound);
  w = load_model("synthetic:demo,layers=many", {});
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, Errc::kInvalidArgument);
}

ModelConfig small_config(bool tied) {
  auto s = parse_synthetic_spec("demo,layers=2");
  EXPECT_TRUE(s);
  ModelConfig c = s->config;
  c.vocab_size = 512;  // keep the test fast
  c.tie_word_embeddings = tied;
  c.eos_token_ids = {3};
  c.bos_token_id = 1;
  return c;
}

TEST(Loader, RandomHfCheckpointsInEveryFloatType) {
  for (DType type : {DType::kBF16, DType::kF16, DType::kF32}) {
    testing::TempDir dir;
    ModelConfig c = small_config(false);
    ASSERT_TRUE(write_random_hf_checkpoint(c, dir.path(), 9, type, 2));
    auto src = TensorSource::open_dir(dir.path());
    ASSERT_TRUE(src);
    EXPECT_EQ(src->find(kEmbedName)->dtype, type);
    LoadStats stats;
    LoadOptions options;
    options.stats = &stats;
    auto w = load_model(dir.path().string(), options);
    ASSERT_TRUE(w) << w.error().to_string();
    EXPECT_EQ(stats.format, "hf-" + std::string(dtype_name(type)));
    EXPECT_EQ(w->layers[1].up_proj.rows, c.intermediate_size);
    EXPECT_EQ(w->layers[1].input_norm.size(), static_cast<size_t>(c.hidden_size));
  }
}

TEST(Loader, RandomHfCheckpointIsDeterministic) {
  testing::TempDir a, b;
  ModelConfig c = small_config(false);
  ASSERT_TRUE(write_random_hf_checkpoint(c, a.path(), 5, DType::kBF16, 1));
  ASSERT_TRUE(write_random_hf_checkpoint(c, b.path(), 5, DType::kBF16, 4));
  EXPECT_EQ(testing::read_file(a.path() / "model.safetensors"),
            testing::read_file(b.path() / "model.safetensors"));
}

TEST(Loader, TiedEmbeddingsQuantizeTheEmbeddingForTheHead) {
  testing::TempDir dir;
  ModelConfig c = small_config(true);
  ASSERT_TRUE(write_random_hf_checkpoint(c, dir.path(), 3, DType::kBF16, 2));
  auto src = TensorSource::open_dir(dir.path());
  ASSERT_TRUE(src);
  EXPECT_EQ(src->find(kLmHeadName), nullptr);
  auto w = load_model(dir.path().string(), {});
  ASSERT_TRUE(w) << w.error().to_string();
  auto expected = quantize_linear(*src->find(kEmbedName), 1);
  ASSERT_TRUE(expected);
  test::expect_linear_eq(*expected, w->lm_head, "tied lm_head");
}

TEST(Loader, ShardedCheckpointLoadsLikeTheSingleFile) {
  testing::TempDir single, sharded;
  ModelConfig c = small_config(false);
  ASSERT_TRUE(write_random_hf_checkpoint(c, single.path(), 11, DType::kBF16, 2));
  std::filesystem::copy_file(single.path() / "config.json", sharded.path() / "config.json");
  {
    auto src = TensorSource::open_dir(single.path());
    ASSERT_TRUE(src);
    const auto& views = src->tensors();
    std::map<std::string, std::string> weight_map;
    size_t half = views.size() / 2;
    for (int shard = 0; shard < 2; ++shard) {
      std::string file = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
      size_t begin = shard == 0 ? 0 : half, end = shard == 0 ? half : views.size();
      std::vector<TensorDecl> decls;
      for (size_t i = begin; i < end; ++i) {
        decls.push_back({std::string(views[i].name), views[i].dtype,
                         std::vector<int64_t>(views[i].shape.begin(), views[i].shape.end())});
        weight_map[std::string(views[i].name)] = file;
      }
      auto w = SafetensorsWriter::create(sharded.path() / file, decls, {{"format", "pt"}});
      ASSERT_TRUE(w);
      for (size_t i = begin; i < end; ++i)
        ASSERT_TRUE(w->write_tensor(views[i].name, views[i].bytes));
      ASSERT_TRUE(w->finish());
    }
    ASSERT_TRUE(write_safetensors_index(sharded.path() / "model.safetensors.index.json", weight_map,
                                        src->total_bytes()));
  }
  auto a = load_model(single.path().string(), {});
  auto b = load_model(sharded.path().string(), {});
  ASSERT_TRUE(a) << a.error().to_string();
  ASSERT_TRUE(b) << b.error().to_string();
  test::expect_weights_eq(*a, *b);
}

TEST(Synthetic, DeterministicFromSeedAndIndependentOfThreads) {
  auto s = parse_synthetic_spec("demo,layers=2");
  ASSERT_TRUE(s);
  auto a = make_synthetic_weights(s->config, 1, 1);
  auto b = make_synthetic_weights(s->config, 1, 6);
  auto c = make_synthetic_weights(s->config, 2, 2);
  ASSERT_TRUE(a && b && c);
  test::expect_weights_eq(*a, *b);
  EXPECT_NE(a->layers[0].q_proj.q, c->layers[0].q_proj.q);
  EXPECT_NE(a->embed_tokens.bf16, c->embed_tokens.bf16);
  // Values in range, scales positive and finite, the int8 range well used.
  int8_t lo = 0, hi = 0;
  for (int8_t v : a->layers[1].down_proj.q) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(lo, -127);
  EXPECT_EQ(hi, 127);
  for (float sc : a->lm_head.scale) ASSERT_TRUE(std::isfinite(sc) && sc > 0);
}

TEST(Synthetic, SpecThroughLoadModel) {
  LoadStats stats;
  LoadOptions options;
  options.seed = 77;
  options.stats = &stats;
  auto w = load_model("synthetic:demo,layers=1", options);
  ASSERT_TRUE(w) << w.error().to_string();
  EXPECT_EQ(stats.format, "synthetic");
  EXPECT_EQ(w->layers.size(), 1u);
  EXPECT_EQ(w->config.vocab_size, 151936);
  EXPECT_EQ(w->lm_head.rows, 151936);
  auto again = load_model("synthetic:demo,layers=1,seed=77", {});
  ASSERT_TRUE(again);
  test::expect_weights_eq(*w, *again);
}

}  // namespace
}  // namespace ringserve::model
