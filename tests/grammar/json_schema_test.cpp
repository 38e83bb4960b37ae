// JSON schema to grammar: random walks under the mask always end in JSON that parses
// and validates; the same walk without the mask does not (so the check can fail); and
// hostile schemas fail fast naming the limit or keyword.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "core/error.h"
#include "grammar/compiled.h"
#include "grammar/mask_builder.h"
#include "grammar/schema_check.h"

namespace strata::grammar {
namespace {

using nlohmann::json;

// Every printable ASCII character and some multi-character JSON-ish words.
std::shared_ptr<const VocabIndex> ascii_vocab() {
  std::vector<std::string> pieces = {""};  // 0: end of generation
  for (int c = 32; c < 127; ++c) pieces.emplace_back(1, static_cast<char>(c));
  for (const char* w :
       {"\"name\":", "true", "false", "null", "{\"", "\"}", "\",\"", "12", "],", "\xC3\xA9"})
    pieces.emplace_back(w);
  return std::make_shared<const VocabIndex>(std::move(pieces), std::vector<int32_t>{0});
}

const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 8},
    "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1, "maxItems": 3},
    "kind": {"enum": ["cat", "dog", 3]},
    "ok": {"type": "boolean"},
    "score": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    "next": {"$ref": "#/$defs/node"}
  },
  "required": ["name", "kind", "tags"],
  "$defs": {"node": {"type": "object", "properties": {"v": {"const": "x"}}, "required": ["v"]}}
})");

// Samples up to `max_tokens` tokens uniformly among the allowed ones (or among all when
// `masked` is false) and returns the text, or "" if the sequence never ended.
std::string random_walk(const std::shared_ptr<const CompiledGrammar>& g, uint64_t seed, bool masked,
                        int max_tokens) {
  std::mt19937_64 rng(seed);
  Matcher m(g);
  MaskBuilder masks(g);
  std::vector<uint8_t> allowed;
  std::vector<int32_t> ids;
  std::string text;
  for (int i = 0; i < max_tokens; ++i) {
    ids.clear();
    if (masked) {
      masks.build(m, allowed);
      for (size_t t = 0; t < allowed.size(); ++t)
        if (allowed[t]) ids.push_back(static_cast<int32_t>(t));
    } else {
      for (int32_t t = 0; t < g->vocab().n_vocab(); ++t) ids.push_back(t);
    }
    if (ids.empty()) return "";
    // End of generation is as likely as the rest together once allowed, so walks end.
    int32_t tok = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
    if (m.accepting() && masked && rng() % 2) tok = 0;
    if (tok == 0) return text;
    text += g->vocab().piece(tok);
    if (masked) {
      EXPECT_TRUE(m.advance(tok)) << text;
    }
  }
  return "";
}

TEST(JsonSchema, MaskedWalksAlwaysValidateUnmaskedOnesDoNot) {
  const auto g = compile_gbnf(schema_to_gbnf(kSchema, "schema"), ascii_vocab());
  int valid_masked = 0, valid_unmasked = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const std::string text = random_walk(g, seed, true, 400);
    std::string why;
    if (schema_check::valid(text, kSchema, why)) {
      ++valid_masked;
    } else {
      ADD_FAILURE() << "seed " << seed << ": " << text << " (" << why << ")";
    }
    if (schema_check::valid(random_walk(g, seed, false, 400), kSchema, why)) ++valid_unmasked;
  }
  EXPECT_EQ(valid_masked, 100);
  EXPECT_EQ(valid_unmasked, 0);
}

TEST(JsonSchema, JsonObjectGrammarParses) {
  const auto g = compile_gbnf(json_object_gbnf(), ascii_vocab());
  int ended = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const std::string text = random_walk(g, seed, true, 300);
    if (text.empty()) continue;  // a walk may not end within its budget; that is allowed
    ++ended;
    const json j = json::parse(text, nullptr, false);
    EXPECT_TRUE(j.is_object()) << text;
  }
  EXPECT_GT(ended, 10);
}

std::string schema_error(const json& schema) {
  try {
    (void)compile_gbnf(schema_to_gbnf(schema, "schema"), ascii_vocab());
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  EXPECT_EQ(schema_error(json::parse(R"({"type":"integer","minimum":3})")),
            "schema: unsupported keyword 'minimum'");
  EXPECT_EQ(schema_error(json::parse(R"({"properties":{"a":{"pattern":"x"}}})")),
            "schema.properties.a: unsupported keyword 'pattern'");
  EXPECT_NE(schema_error(json::parse(R"({"$ref":"http://x/y"})")).find("only local references"),
            std::string::npos);
  EXPECT_NE(
      schema_error(json::parse(R"({"type":"object","additionalProperties":true,"properties":{}})"))
          .find("additionalProperties"),
      std::string::npos);
}

TEST(JsonSchema, HostileSchemasFailFastOrStayBounded) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  // 10,000 properties: over the per-object limit.
  json props = json::object();
  for (int i = 0; i < 10000; ++i) props["p" + std::to_string(i)] = {{"type", "integer"}};
  EXPECT_NE(
      schema_error({{"type", "object"}, {"properties", props}}).find("at most 1000 per object"),
      std::string::npos);
  // Deep nesting.
  json deep = {{"type", "integer"}};
  for (int i = 0; i < 100; ++i) deep = {{"type", "array"}, {"items", deep}};
  EXPECT_NE(schema_error(deep).find("nested deeper"), std::string::npos);
  // A huge enum.
  json values = json::array();
  for (int i = 0; i < 5000; ++i) values.push_back(i);
  EXPECT_NE(schema_error({{"enum", values}}).find("at most 1000 values"), std::string::npos);
  // A huge maxLength.
  EXPECT_NE(schema_error({{"type", "string"}, {"maxLength", 100000000}}).find("at most 1000"),
            std::string::npos);
  // A self-referencing definition is fine (recursion that consumes), a left-recursive
  // one is not.
  EXPECT_EQ(
      schema_error(
          json::parse(
              R"({"$ref":"#/$defs/a","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}}})"))
              .find("left-recursive") != std::string::npos,
      true);
  // 1000 optional properties (the limit): compiles, and its first mask is bounded.
  json many = json::object();
  for (int i = 0; i < 1000; ++i) many["p" + std::to_string(i)] = {{"type", "integer"}};
  const auto g =
      compile_gbnf(schema_to_gbnf({{"type", "object"}, {"properties", many}}, "s"), ascii_vocab());
  Matcher m(g);
  ASSERT_TRUE(m.advance_text("{", *std::make_unique<Stepper>(g->grammar())));
  MaskBuilder masks(g);
  std::vector<uint8_t> allowed;
  EXPECT_GT(masks.build(m, allowed), 0);
  const double s = std::chrono::duration<double>(clock::now() - t0).count();
  EXPECT_LT(s, 10.0) << "hostile schemas took " << s << " s";
}

}  // namespace
}  // namespace strata::grammar
