// The real tiny models from ../shared, converted to GGUF once per test process.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace strata::testing {

// Paths of the converted models (aidreams260K with its tokenizer; gqa260K with the
// aidreams tokenizer, which has the same vocabulary size, for the CLI to load).
const std::string& aidreams_gguf();
const std::string& gqa_gguf();
const nlohmann::json& aidreams_ref();
const nlohmann::json& gqa_ref();

}  // namespace strata::testing
