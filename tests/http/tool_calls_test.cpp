// Tool calls without a model: parsing every supported format, refusing undeclared
// functions, request validation, and the call grammar: random walks under its mask are
// calls whose arguments validate against the function's schema.
#include "server/tool_calls.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar/compiled.h"
#include "grammar/mask_builder.h"
#include "grammar/schema_check.h"
#include "server/api_error.h"

namespace strata::server {
namespace {

using nlohmann::json;

ToolSpec weather_spec(ToolSpec::Choice choice = ToolSpec::Choice::kRequired) {
  const json body = {{"tools", json::parse(R"([{"type":"function","function":{"name":"get_weather",
        "parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":8},
        "unit":{"enum":["c","f"]}},"required":["city"]}}},
        {"type":"function","function":{"name":"noop","parameters":{"type":"object","properties":{}}}}])")}};
  ToolSpec spec = *parse_tools(body);
  spec.choice = choice;
  return spec;
}

TEST(ToolCalls, ParsesEveryFormatAndOnlyDeclaredFunctions) {
  const ToolSpec spec = weather_spec(ToolSpec::Choice::kAuto);
  const auto hermes = parse_tool_calls(
      "Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Oslo\"}}\n</tool_call>",
      spec, "call_x_");
  ASSERT_EQ(hermes.calls.size(), 1u);
  EXPECT_EQ(hermes.content, "Sure.");
  EXPECT_EQ(hermes.calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(hermes.calls[0]["function"]["arguments"].get<std::string>())["city"],
            "Oslo");
  EXPECT_EQ(hermes.calls[0]["id"], "call_x_0");
  const auto mistral = parse_tool_calls(
      R"([TOOL_CALLS][{"name":"noop","arguments":{}},{"name":"get_weather","arguments":{"city":"A"}}])",
      spec, "c");
  EXPECT_EQ(mistral.calls.size(), 2u);
  const auto llama =
      parse_tool_calls(R"({"name": "get_weather", "parameters": {"city": "B"}})", spec, "c");
  ASSERT_EQ(llama.calls.size(), 1u);
  EXPECT_EQ(json::parse(llama.calls[0]["function"]["arguments"].get<std::string>())["city"], "B");
  const auto unknown = parse_tool_calls(R"({"name": "rm_rf", "arguments": {}})", spec, "c");
  EXPECT_TRUE(unknown.calls.empty());
  EXPECT_EQ(unknown.content, R"({"name": "rm_rf", "arguments": {}})");
  EXPECT_TRUE(parse_tool_calls("just text", spec, "c").calls.empty());
}

TEST(ToolCalls, RequestValidationNamesTheField) {
  auto error = [](const json& body) {
    try {
      (void)parse_tools(body);
    } catch (const ApiError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(error({{"tools", json::array({{{"type", "retrieval"}}})}}).find("tools[0].type"),
            std::string::npos);
  EXPECT_NE(error({{"tool_choice", "required"}}).find("needs tools"), std::string::npos);
  json two = json::parse(
      R"([{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"a"}}])");
  EXPECT_NE(error({{"tools", two}}).find("declared twice"), std::string::npos);
  json one = json::parse(R"([{"type":"function","function":{"name":"a"}}])");
  EXPECT_NE(error({{"tools", one},
                   {"tool_choice", {{"type", "function"}, {"function", {{"name", "b"}}}}}})
                .find("'b' is not one of the tools"),
            std::string::npos);
  json many = json::array();
  for (int i = 0; i < 200; ++i)
    many.push_back({{"type", "function"}, {"function", {{"name", "f" + std::to_string(i)}}}});
  EXPECT_NE(error({{"tools", many}}).find("at most 128"), std::string::npos);
}

TEST(ToolCalls, CallGrammarOnlyWritesValidCalls) {
  std::vector<std::string> pieces = {""};
  for (int c = 32; c < 127; ++c) pieces.emplace_back(1, static_cast<char>(c));
  pieces.emplace_back("\n");
  pieces.emplace_back("<tool_call>");
  auto vocab =
      std::make_shared<const grammar::VocabIndex>(std::move(pieces), std::vector<int32_t>{0});
  const ToolSpec spec = weather_spec();
  const json params = spec.tools[0]["function"]["parameters"];
  for (ToolFormat format : {ToolFormat::kHermes, ToolFormat::kJson, ToolFormat::kLlama3}) {
    const auto g = grammar::compile_gbnf(tool_call_gbnf(spec, format), vocab);
    std::mt19937_64 rng(7);
    for (int walk = 0; walk < 30; ++walk) {
      grammar::Matcher m(g);
      grammar::MaskBuilder masks(g);
      std::vector<uint8_t> allowed;
      std::string text;
      for (int i = 0; i < 300 && !m.accepting(); ++i) {
        masks.build(m, allowed);
        std::vector<int32_t> ids;
        for (size_t t = 1; t < allowed.size(); ++t)
          if (allowed[t]) ids.push_back(static_cast<int32_t>(t));
        ASSERT_FALSE(ids.empty()) << text;
        const int32_t tok = ids[rng() % ids.size()];
        text += vocab->piece(tok);
        ASSERT_TRUE(m.advance(tok));
      }
      ASSERT_TRUE(m.accepting()) << text;
      const ParsedOutput out = parse_tool_calls(text, spec, "c");
      ASSERT_EQ(out.calls.size(), 1u) << text;
      const json& fn = out.calls[0]["function"];
      if (fn["name"] == "get_weather") {
        std::string why;
        EXPECT_TRUE(grammar::schema_check::valid(fn["arguments"].get<std::string>(), params, why))
            << text << ": " << why;
      }
    }
  }
}

}  // namespace
}  // namespace strata::server
