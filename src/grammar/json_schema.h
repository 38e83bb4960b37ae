// JSON Schema to GBNF, for response_format json_schema and tool arguments. The output
// is compact JSON (no whitespace between tokens), every string and number of bounded
// length where the schema bounds it.
//
// Supported: type (one or a list), properties, required, additionalProperties: false
// (also what an absent one means: only the listed properties are generated), enum,
// const, items, minItems, maxItems, minLength, maxLength, anyOf, oneOf (as anyOf),
// $ref to "#/$defs/..." or "#/definitions/..." (recursive ones too), and the annotations
// title, description, default, examples, $schema, $id, $comment, strict. Any other
// keyword is an Error naming it ("schema.properties.age: unsupported keyword
// 'minimum'"). Limits (SchemaLimits) bound nesting, properties, enum values and the
// size of the grammar, so a hostile schema fails fast with a message naming the limit.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace strata::grammar {

struct SchemaLimits {
  int32_t max_depth = 32;              // nested schemas
  size_t max_properties = 1000;        // per object
  size_t max_total_properties = 5000;  // in the whole schema
  size_t max_enum_values = 1000;       // per enum
  int64_t max_length_bound = 1000;     // maxLength, maxItems (their grammar is unrolled)
  size_t max_grammar_bytes = 256 * 1024;
};

// How the rules are named, so that several schemas can share one grammar (tool calls):
// the schema's own rule is `root`, the others start with `prefix`, and the shared
// primitives (string, number, value, ...) are written only with `primitives`.
struct SchemaRuleNames {
  std::string root = "root";
  std::string prefix = "s";
  bool primitives = true;
};

// `where` prefixes error messages ("response_format.json_schema.schema").
std::string schema_to_gbnf(const nlohmann::json& schema, const std::string& where,
                           const SchemaLimits& limits = {}, const SchemaRuleNames& names = {});
// The shared primitives alone, for a grammar whose schemas were written without them.
std::string json_primitives_gbnf();

// Any JSON value whose top level is an object (response_format json_object).
std::string json_object_gbnf();

}  // namespace strata::grammar
