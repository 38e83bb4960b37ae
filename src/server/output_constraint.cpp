#include "server/output_constraint.h"

#include "core/error.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"
#include "server/json_fields.h"

namespace strata::server {

using nlohmann::json;

std::optional<GrammarSource> parse_output_constraint(const json& body) {
  const JsonFields f(body);
  std::optional<GrammarSource> out;
  if (const auto g = f.string("grammar"); g && !g->empty()) out = GrammarSource{*g, "grammar"};
  const json* rf = f.get("response_format");
  if (!rf) return out;
  if (!rf->is_object()) throw invalid_field("response_format", "must be an object");
  const JsonFields rff(*rf, "response_format.");
  const auto type = rff.string("type");
  if (!type) throw invalid_field("response_format.type", "is required");
  if (*type == "text") return out;
  if (out) throw invalid_field("grammar", "cannot be combined with response_format " + *type);
  if (*type == "json_object") return GrammarSource{grammar::json_object_gbnf(), "response_format"};
  if (*type != "json_schema") {
    throw invalid_field("response_format.type", "must be text, json_object or json_schema");
  }
  const json* js = rff.get("json_schema");
  if (!js || !js->is_object())
    throw invalid_field("response_format.json_schema", "is required (an object)");
  const auto schema = js->find("schema");
  if (schema == js->end()) throw invalid_field("response_format.json_schema.schema", "is required");
  const std::string where = "response_format.json_schema.schema";
  try {
    return GrammarSource{grammar::schema_to_gbnf(*schema, where), where};
  } catch (const Error& e) {
    // The message starts with the path at fault.
    throw ApiError(400, e.what(), where);
  }
}

std::shared_ptr<const grammar::VocabIndex> grammar_vocab(const Tokenizer& tok) {
  std::vector<std::string> pieces(static_cast<size_t>(tok.n_vocab()));
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_eog(id)) eog.push_back(id);
    const TokenType t = tok.token_type(id);
    if (tok.is_control(id) || t == TokenType::kUnknown || t == TokenType::kUnused) continue;
    pieces[static_cast<size_t>(id)] = tok.token_to_piece(id);
  }
  return std::make_shared<const grammar::VocabIndex>(std::move(pieces), std::move(eog));
}

std::shared_ptr<const grammar::CompiledGrammar> compile_constraint(
    const GrammarSource& source, std::shared_ptr<const grammar::VocabIndex> vocab) {
  try {
    return grammar::compile_gbnf(source.gbnf, std::move(vocab));
  } catch (const Error& e) {
    throw ApiError(400, source.field + ": " + e.what(), source.field);
  }
}

}  // namespace strata::server
