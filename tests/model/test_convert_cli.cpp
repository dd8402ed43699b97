// `ringserve convert` end to end: the real binary, then load_model on what it
// wrote.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include "model/loader.h"
#include "model/package_files.h"
#include "model/tensor_source.h"
#include "support/test_support.h"
#include "weights_compare.h"

namespace ringserve::model {
namespace {

int run(const std::string& args) {
  std::string cmd = testing::binary_path("ringserve").string() + " convert " + args + " 2>&1";
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(ConvertCli, QuantizesAFixtureModel) {
  ASSERT_TRUE(std::filesystem::exists(testing::binary_path("ringserve")));
  testing::TempDir out;
  auto model = testing::fixture_path("models/tiny-qwen2");
  ASSERT_EQ(run("--model " + model.string() + " --out " + out.path().string() + " --threads 2"), 0);
  auto direct = load_model(model.string(), {});
  auto converted = load_model(out.path().string(), {});
  ASSERT_TRUE(direct && converted) << (converted ? "" : converted.error().to_string());
  test::expect_weights_eq(*direct, *converted);
}

TEST(ConvertCli, WritesTheDemoModelWithTheRealTokenizer) {
  testing::TempDir out;
  auto tok = testing::fixture_path("tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz");
  ASSERT_EQ(
      run("--model synthetic:demo --tokenizer " + tok.string() + " --out " + out.path().string()),
      0);
  EXPECT_TRUE(std::filesystem::exists(out.path() / "tokenizer.json"));
  auto text = read_tokenizer_text(out.path() / "tokenizer.json");
  ASSERT_TRUE(text);
  auto bound = tokenizer_id_bound(*text, "tokenizer.json");
  ASSERT_TRUE(bound);
  auto w = load_model(out.path().string(), {});
  ASSERT_TRUE(w) << w.error().to_string();
  EXPECT_GE(w->config.vocab_size, *bound);
  EXPECT_EQ(w->config.hidden_size, 256);
  EXPECT_EQ(w->config.bos_token_id, 151646);
  EXPECT_EQ(w->config.eos_token_ids, std::vector<int32_t>{151643});
}

TEST(ConvertCli, WritesRandomHfCheckpoints) {
  testing::TempDir out;
  ASSERT_EQ(run("--model synthetic:demo,layers=1 --format hf-bf16 --out " + out.path().string()),
            0);
  auto src = TensorSource::open_dir(out.path());
  ASSERT_TRUE(src);
  EXPECT_EQ(src->find("model.layers.0.mlp.up_proj.weight")->dtype, DType::kBF16);
  EXPECT_TRUE(load_model(out.path().string(), {}));
}

TEST(ConvertCli, ErrorsExitNonZero) {
  testing::TempDir out;
  EXPECT_NE(run("--model /nonexistent --out " + out.path().string()), 0);
  EXPECT_NE(run("--model " + testing::fixture_path("models/tiny-qwen2").string() +
                " --format hf-bf16 --out " + out.path().string()),
            0);
  EXPECT_NE(run("--model synthetic:demo --format gguf --out " + out.path().string()), 0);
  // The fixture model's vocabulary (1024) cannot hold the real tokenizer.
  EXPECT_NE(
      run("--model " + testing::fixture_path("models/tiny-qwen2").string() + " --tokenizer " +
          testing::fixture_path("tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz").string() +
          " --out " + out.path().string()),
      0);
}

}  // namespace
}  // namespace ringserve::model
