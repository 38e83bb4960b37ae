// The real tiny models from ../shared, converted to GGUF once per test process
// (aidreams260K with its tokenizer; gqa260K with the aidreams tokenizer, which has the
// same vocabulary size, so the CLI can load it).
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "convert/llama2c.h"
#include "support/paths.h"

namespace strata::testing {

inline std::string convert_tiny(const std::string& checkpoint, const std::string& out_name) {
  const std::string models = shared_dir() + "/models/";
  Llama2cConvertOptions o;
  o.checkpoint_path = models + checkpoint;
  o.tokenizer_path = models + "aidreams260K.tok512.bin";
  o.output_path = scratch_dir() + "/" + out_name;
  convert_llama2c(o);
  return o.output_path;
}

inline nlohmann::json load_json(const std::string& name) {
  std::ifstream in(shared_dir() + "/models/" + name);
  return nlohmann::json::parse(in);
}

inline const std::string& aidreams_gguf() {
  static const std::string path = convert_tiny("aidreams260K.bin", "aidreams260K.gguf");
  return path;
}

inline const std::string& gqa_gguf() {
  static const std::string path = convert_tiny("gqa260K.bin", "gqa260K.gguf");
  return path;
}

inline const nlohmann::json& aidreams_ref() {
  static const nlohmann::json j = load_json("aidreams260K.ref.json");
  return j;
}

inline const nlohmann::json& gqa_ref() {
  static const nlohmann::json j = load_json("gqa260K.ref.json");
  return j;
}

}  // namespace strata::testing
