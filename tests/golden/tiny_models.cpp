#include "golden/tiny_models.h"

#include <fstream>

#include "convert/llama2c.h"
#include "support/paths.h"

namespace strata::testing {
namespace {

std::string convert(const std::string& checkpoint, const std::string& out_name) {
  const std::string models = shared_dir() + "/models/";
  Llama2cConvertOptions o;
  o.checkpoint_path = models + checkpoint;
  o.tokenizer_path = models + "aidreams260K.tok512.bin";
  o.output_path = scratch_dir() + "/" + out_name;
  convert_llama2c(o);
  return o.output_path;
}

nlohmann::json load_json(const std::string& name) {
  std::ifstream in(shared_dir() + "/models/" + name);
  return nlohmann::json::parse(in);
}

}  // namespace

const std::string& aidreams_gguf() {
  static const std::string path = convert("aidreams260K.bin", "aidreams260K.gguf");
  return path;
}

const std::string& gqa_gguf() {
  static const std::string path = convert("gqa260K.bin", "gqa260K.gguf");
  return path;
}

const nlohmann::json& aidreams_ref() {
  static const nlohmann::json j = load_json("aidreams260K.ref.json");
  return j;
}

const nlohmann::json& gqa_ref() {
  static const nlohmann::json j = load_json("gqa260K.ref.json");
  return j;
}

}  // namespace strata::testing
