// The request fields that constrain what the model may write: `response_format`
// (OpenAI: text, json_object, json_schema) and `grammar` (llama.cpp: GBNF text), turned
// into one GBNF grammar; and the vocabulary index every compiled grammar is matched
// against (built once per model). Compiling runs on the prepare pool with the limits of
// grammar/gbnf_parser.h and grammar/json_schema.h; a bad or oversized one is a 400
// naming the field.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "grammar/compiled.h"
#include "tokenizer/tokenizer.h"

namespace strata::server {

struct GrammarSource {
  std::string gbnf;
  std::string field;  // the request field it came from, named in errors
};

// From `response_format` or `grammar` (both at once is a 400); nullopt: unconstrained.
std::optional<GrammarSource> parse_output_constraint(const nlohmann::json& body);

// Every token's bytes (control and unknown tokens get none, so no grammar allows them)
// and the end-of-generation ids.
std::shared_ptr<const grammar::VocabIndex> grammar_vocab(const Tokenizer& tokenizer);

// Compiles `source`; a grammar error is a 400 naming source.field.
std::shared_ptr<const grammar::CompiledGrammar> compile_constraint(
    const GrammarSource& source, std::shared_ptr<const grammar::VocabIndex> vocab);

}  // namespace strata::server
