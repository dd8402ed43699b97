// `ringserve convert`: quantize a model once into a ringserve-int8
// checkpoint, or write a random model (the quick-start demo, load-benchmark
// checkpoints).
//
//   ringserve convert --model DIR --out DIR
//   ringserve convert --model synthetic:demo --tokenizer tokenizer.json.gz --out DIR
//   ringserve convert --model synthetic:deepseek-r1-distill-qwen-7b --format hf-bf16 --out DIR
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "model/checkpoint.h"
#include "model/dtype.h"
#include "model/loader.h"
#include "model/package_files.h"
#include "model/synthetic.h"
#include "util/log.h"

namespace ringserve::cli {
namespace {

struct ConvertArgs {
  std::string model;
  std::string out;
  std::string tokenizer;
  std::string format = "ringserve-int8";
  int threads = 0;
  uint64_t seed = 0x5eed;
};

// The tokenizer given with --tokenizer goes in as plain tokenizer.json, after
// checking the model's vocabulary can hold every id it produces.
Status install_tokenizer(const ConvertArgs& args, const model::ModelConfig& config) {
  std::string text = RS_TRY(model::read_tokenizer_text(args.tokenizer));
  int64_t bound = RS_TRY(model::tokenizer_id_bound(text, args.tokenizer));
  if (bound > config.vocab_size)
    return make_error(Errc::kInvalidArgument,
                      "{}: token ids reach {} but the model's vocabulary is {}", args.tokenizer,
                      bound - 1, config.vocab_size);
  auto path = std::filesystem::path(args.out) / "tokenizer.json";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return make_error(Errc::kIoError, "{}: write failed", path.string());
  return {};
}

Status run_convert(const ConvertArgs& args) {
  auto logger = log::get("model");
  auto start = std::chrono::steady_clock::now();
  const bool synthetic = args.model.starts_with(model::kSyntheticPrefix);
  model::ModelConfig config;

  if (args.format.starts_with("hf-")) {
    if (!synthetic)
      return make_error(Errc::kInvalidArgument,
                        "--format {} writes random weights: needs --model synthetic:<name>",
                        args.format);
    auto dtype = model::parse_dtype(args.format.substr(3) == "bf16"  ? "BF16"
                                    : args.format.substr(3) == "f16" ? "F16"
                                    : args.format.substr(3) == "f32" ? "F32"
                                                                     : "");
    if (!dtype)
      return make_error(Errc::kInvalidArgument, "--format {}: use hf-bf16, hf-f16 or hf-f32",
                        args.format);
    auto spec = RS_TRY(model::parse_synthetic_spec(
        std::string_view(args.model).substr(model::kSyntheticPrefix.size())));
    config = spec.config;
    RS_TRY_STATUS(model::write_random_hf_checkpoint(config, args.out, spec.seed.value_or(args.seed),
                                                    *dtype, args.threads));
  } else if (args.format == model::kRingserveFormat) {
    model::LoadOptions options;
    options.threads = args.threads;
    options.seed = args.seed;
    auto weights = RS_TRY(model::load_model(args.model, options));
    config = weights.config;
    RS_TRY_STATUS(model::save_quantized_checkpoint(weights, args.out));
    if (!synthetic) RS_TRY_STATUS(model::copy_companion_files(args.model, args.out));
  } else {
    return make_error(Errc::kInvalidArgument,
                      "--format {}: use ringserve-int8, hf-bf16, hf-f16 or hf-f32", args.format);
  }
  if (!args.tokenizer.empty()) RS_TRY_STATUS(install_tokenizer(args, config));

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::error_code ec;
  auto bytes =
      std::filesystem::file_size(std::filesystem::path(args.out) / "model.safetensors", ec);
  logger->info("wrote {} ({}, {:.3f} GB) in {:.2f} s", args.out, args.format,
               ec ? 0.0 : bytes / 1e9, seconds);
  return {};
}

}  // namespace

void add_convert_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ConvertArgs>();
  auto* sub = app.add_subcommand(
      "convert", "Quantize a model into a ringserve-int8 checkpoint, or write a random one");
  sub->add_option("--model", args->model,
                  "Hugging Face model directory, or synthetic:<manifest>[,layers=N][,seed=S]")
      ->required();
  sub->add_option("--out", args->out, "Output directory (created)")->required();
  sub->add_option(
      "--tokenizer", args->tokenizer,
      "tokenizer.json (or .json.gz) to install as OUT/tokenizer.json (for synthetic models)");
  sub->add_option("--format", args->format,
                  "ringserve-int8 (quantized, default), or hf-bf16 / hf-f16 / hf-f32 (random float "
                  "weights in "
                  "Hugging Face layout, synthetic models only)")
      ->capture_default_str();
  sub->add_option("--threads", args->threads, "Worker threads (0: all cores)")
      ->capture_default_str();
  sub->add_option("--seed", args->seed, "Seed for synthetic weights (unless the spec sets seed=)")
      ->capture_default_str();
  sub->callback([args, &exit_code] {
    if (auto st = run_convert(*args); !st) {
      std::fprintf(stderr, "ringserve convert: %s\n", st.error().to_string().c_str());
      exit_code = 1;
    }
  });
}

}  // namespace ringserve::cli
