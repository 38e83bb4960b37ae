// The sandbox: hostile templates and data must end in a strata::Error naming the template,
// line and column, never in a crash, a hang or unbounded memory.
#include <gtest/gtest.h>
#include <pthread.h>

#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "chat_template/chat_template.h"
#include "core/error.h"

namespace {

using nlohmann::json;
using strata::chat::ChatTemplate;
using strata::chat::RenderOptions;

std::string render(const std::string& source, const RenderOptions& opts = {},
                   const json& messages = json::array()) {
  return ChatTemplate(source, "t.jinja").render(messages, opts);
}

// The error message of rendering (or parsing) `source`; fails the test if none is thrown.
std::string error_of(const std::string& source, const RenderOptions& opts = {},
                     const json& messages = json::array()) {
  try {
    render(source, opts, messages);
  } catch (const strata::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << source;
  return "";
}

void expect_error(const std::string& source, const std::string& fragment,
                  const RenderOptions& opts = {}) {
  std::string message = error_of(source, opts);
  EXPECT_NE(message.find(fragment), std::string::npos) << source << "\n  error: " << message;
  EXPECT_TRUE(std::regex_search(message, std::regex("^t\\.jinja:[0-9]+:[0-9]+: "))) << message;
}

TEST(Sandbox, LoopIterationCap) {
  expect_error("{% for x in range(10**9) %}{% endfor %}", "loop iteration limit");
  RenderOptions small;
  small.max_loop_iterations = 100;
  EXPECT_EQ(render("{% for x in range(100) %}{% endfor %}ok", small), "ok");
  expect_error("{% for x in range(60) %}{% endfor %}{% for x in range(60) %}{% endfor %}",
               "loop iteration limit", small);
  expect_error(
      "{% for x in range(10) %}{% for y in range(10) %}{% for z in range(10) %}{% endfor %}{% "
      "endfor %}{% endfor %}",
      "loop iteration limit", small);
  expect_error("{% set l = [1] %}{% for x in l %}{% do l.append(x) %}{% endfor %}",
               "loop iteration limit", small);
  expect_error("{{ [1] * 1000000000 }}", "too large");
}

TEST(Sandbox, RecursionCap) {
  expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recursion depth");
  RenderOptions shallow;
  shallow.max_recursion_depth = 10;
  const std::string countdown =
      "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(N) }}";
  EXPECT_EQ(render(std::regex_replace(countdown, std::regex("N"), "9"), shallow), "987654321");
  expect_error(std::regex_replace(countdown, std::regex("N"), "20"), "recursion depth", shallow);
  // A huge configured depth still cannot overflow the native stack.
  RenderOptions deep;
  deep.max_recursion_depth = 1'000'000;
  expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "too deep", deep);
}

// Deep recursion on a thread with a small stack ends in an error, not a stack overflow.
TEST(Sandbox, RecursionOnSmallThreadStack) {
  struct Job {
    std::string error;
    static void* run(void* arg) {
      auto* job = static_cast<Job*>(arg);
      RenderOptions deep;
      deep.max_recursion_depth = 1'000'000;
      try {
        render(
            "{% macro f(n) %}{% for i in [n] %}{{ f(i + 1) }}{% endfor %}{% endmacro %}{{ f(0) }}",
            deep);
      } catch (const strata::Error& e) {
        job->error = e.what();
      }
      return nullptr;
    }
  } job;
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, size_t{512} << 10), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, &Job::run, &job), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_NE(job.error.find("too deep"), std::string::npos) << job.error;
}

TEST(Sandbox, OutputAndStringSizeCaps) {
  expect_error("{{ 'a' * 10**10 }}", "output size limit");
  RenderOptions small;
  small.max_output_bytes = 1 << 16;
  expect_error("{% for i in range(100) %}{{ 'x' * 1000 }}{% endfor %}", "output size limit", small);
  expect_error("{% set s = 'ab' * 15000 %}{{ (s ~ s ~ s) | length }}", "output size limit", small);
  expect_error("{{ 'ab' | indent(100000) }}", "output size limit", small);
  expect_error("{{ ['x' * 30000, 'y' * 30000, 'z' * 30000] | tojson }}", "output size limit",
               small);
  RenderOptions tiny;
  tiny.max_output_bytes = 100;
  EXPECT_EQ(render("{{ 'x' * 100 }}", tiny).size(), 100u);
  expect_error("{{ 'x' * 101 }}", "output size limit", tiny);
  expect_error("{% for i in range(50) %}{{ i }}{{ i }}{{ i }}{% endfor %}", "output size limit",
               tiny);
  expect_error(
      "{% set l = [] %}{% for i in range(1000) %}{% do l.append('abcdefghij') %}{% endfor %}{{ l "
      "}}",
      "too large", tiny);
}

TEST(Sandbox, PythonInternalsAreUnreachable) {
  for (const char* source :
       {"{{ ''.__class__ }}", "{{ ''.__class__.__mro__ }}", "{{ messages.__init__ }}",
        "{{ range.__globals__ }}", "{{ namespace.__init__.__globals__ }}", "{{ {}.__class__ }}",
        "{{ ''.mro }}", "{{ [].__len__ }}", "{{ cycler.__init__ }}", "{{ (1).__class__ }}",
        "{{ none.__class__ }}", "{{ ''['__class__'] }}", "{{ loop.__class__ }}",
        "{% for x in [1] %}{{ loop.__class__ }}{% endfor %}", "{{ x | attr('__class__') }}",
        "{{ 'a'.upper.__self__ }}", "{{ lipsum.__globals__ }}"}) {
    std::string message = error_of(source);
    EXPECT_TRUE(message.find("unsafe") != std::string::npos ||
                message.find("undefined") != std::string::npos)
        << source << ": " << message;
  }
  // Plain data keys are still reachable, also when they start with an underscore.
  EXPECT_EQ(
      render("{{ d._private }}|{{ d['__weird__'] }}|{{ d.mro }}",
             RenderOptions{.extra = {{"d", {{"_private", 1}, {"__weird__", 2}, {"mro", 3}}}}}),
      "1|2|3");
}

TEST(Sandbox, MalformedTemplatesReportLineAndColumn) {
  struct Bad {
    const char* source;
    const char* position;
    const char* fragment;
  };
  const Bad cases[] = {
      {"hello\n{% if true %}\nno end", "t.jinja:3:7:", "expected 'elif' or 'else' or 'endif'"},
      {"{{ 1 +\n}}", "t.jinja:2:1:", "expected an expression"},
      {"a\n  {{ foo( }}", "t.jinja:2:11:", "unexpected '}'"},
      {"{% for x in %}{% endfor %}", "t.jinja:1:13:", "expected an expression"},
      {"{% endfor %}", "t.jinja:1:4:", "unexpected 'endfor'"},
      {"{% frobnicate %}", "t.jinja:1:4:", "unknown tag 'frobnicate'"},
      {"x\n\n   {{ 'unterminated }}", "t.jinja:3:7:", "unterminated string"},
      {"{# never closed", "t.jinja:1:1:", "missing end of comment"},
      {"{% raw %}never closed", "t.jinja:1:1:", "missing end of raw"},
      {"{{ a b }}", "t.jinja:1:6:", "expected end of print statement"},
      {"{{ x | }}", "t.jinja:1:8:", "expected a name"},
      {"{% set = 1 %}", "t.jinja:1:8:", "expected a name"},
      {"{% macro m(a=1, b) %}{% endmacro %}", "t.jinja:1:17:", "parameter without a default"},
      {"{% include 'other.jinja' %}", "t.jinja:1:4:", "not supported"},
      {"{% break %}", "t.jinja:1:4:", "outside of a loop"},
      {"{{ 1 $ 2 }}", "t.jinja:1:6:", "unexpected character '$'"},
      {"{{ 'caf\u00e9' + }}", "t.jinja:1:13:", "expected an expression"},
  };
  for (const Bad& b : cases) {
    std::string message;
    try {
      ChatTemplate t(b.source, "t.jinja");
      ADD_FAILURE() << "parsed: " << b.source;
    } catch (const strata::Error& e) {
      message = e.what();
    }
    EXPECT_EQ(message.rfind(b.position, 0), 0u) << b.source << "\n  error: " << message;
    EXPECT_NE(message.find(b.fragment), std::string::npos) << b.source << "\n  error: " << message;
  }
}

TEST(Sandbox, RuntimeErrorsReportPosition) {
  EXPECT_EQ(error_of("line one\n  {{ 1 // 0 }}"),
            "t.jinja:2:8: integer division or modulo by zero");
  EXPECT_EQ(error_of("{{ raise_exception('bad role') }}"), "t.jinja:1:19: bad role");
  EXPECT_EQ(error_of("{{ foo.bar }}"), "t.jinja:1:7: 'foo' is undefined");
  expect_error("{{ 'x' | nosuchfilter }}", "no filter named 'nosuchfilter'");
  expect_error("{{ 'x' | map('nosuchfilter') | list }}", "no filter named 'nosuchfilter'");
  expect_error("{{ 'x' is nosuchtest }}", "no test named 'nosuchtest'");
  expect_error("{{ 'x' + 1 }}", "can only concatenate str");
  expect_error("{% for a, b in [1] %}{% endfor %}", "not iterable");
  expect_error("{{ 10 ** 100 }}", "integer overflow");
}

TEST(Sandbox, CyclicAndDeepValues) {
  expect_error("{% set l = [] %}{% do l.append(l) %}{{ l }}", "cyclic");
  expect_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns | tojson }}", "serializable");
  expect_error("{% set d = {} %}{% do d.update({'d': d}) %}{{ d | tojson }}", "circular");
  expect_error("{% set l = [] %}{% do l.append(l) %}{{ l | sort }}", "cyclic");
  // Deep nesting built in a loop is torn down without recursion.
  EXPECT_EQ(render("{% set ns = namespace(x=[]) %}{% for i in range(50000) %}{% set ns.x = [ns.x] "
                   "%}{% endfor %}ok"),
            "ok");
  // Deeply nested input data is rejected, not recursed into.
  json deep = json::array();
  for (int i = 0; i < 1000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  json messages = json::array();
  messages.push_back(json::object());
  messages[0]["role"] = "user";
  messages[0]["content"] = std::move(deep);
  std::string message;
  try {
    render("{{ messages }}", {}, messages);
  } catch (const strata::Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("nested"), std::string::npos) << message;
}

TEST(Sandbox, DeepTemplatesAreRejected) {
  std::string parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_NE(error_of(parens).find("nested too deeply"), std::string::npos);
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_NE(error_of(chain + " }}").find("too deeply nested"), std::string::npos);
  std::string blocks;
  for (int i = 0; i < 5000; ++i) blocks += "{% if true %}";
  EXPECT_NE(error_of(blocks).find("nested too deeply"), std::string::npos);
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_NE(error_of(nots + "1 }}").find("nested too deeply"), std::string::npos);
}

TEST(Sandbox, HostileMessageData) {
  // Invalid UTF-8 passes through byte for byte; string functions do not choke on it.
  json messages =
      json::array({{{"role", "user"}, {"content", std::string("a\xff\xc3(b\xe2\x82")}}});
  EXPECT_EQ(render("{{ messages[0].content }}|{{ messages[0].content | length }}|{{ "
                   "messages[0].content[::-1] | length }}",
                   {}, messages),
            std::string("a\xff\xc3(b\xe2\x82") + "|7|7");
  EXPECT_NO_THROW(render(
      "{{ messages[0].content | upper | tojson }}{{ messages[0].content.title() }}", {}, messages));
  // Data that is not what the template expects is an error, not a crash.
  expect_error("{{ messages[0].content.startswith('x') }}", "has no element 0");
  std::string not_array;
  try {
    ChatTemplate("x", "t.jinja").render(json::object(), {});
  } catch (const strata::Error& e) {
    not_array = e.what();
  }
  EXPECT_NE(not_array.find("messages must be a JSON array"), std::string::npos) << not_array;
}

TEST(Api, DefaultChatmlTemplate) {
  ChatTemplate chatml(strata::chat::default_chatml_template(), "chatml");
  json messages =
      json::array({{{"role", "system"}, {"content", "S"}}, {{"role", "user"}, {"content", "U"}}});
  RenderOptions opts;
  opts.add_generation_prompt = true;
  EXPECT_EQ(
      chatml.render(messages, opts),
      "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chatml.name(), "chatml");
}

TEST(Api, VariablesAndClock) {
  RenderOptions opts;
  opts.bos_token = "<s>";
  opts.eos_token = "</s>";
  opts.now = 0;
  opts.extra = {{"enable_thinking", false}, {"tools", nullptr}};
  opts.extra_ordered = {{"zeta", 1}, {"alpha", 2}};
  EXPECT_EQ(render("{{ bos_token }}{{ eos_token }}{{ add_generation_prompt }}{{ enable_thinking "
                   "}}{{ tools }}"
                   "{{ strftime_now('%Y-%m-%d %H:%M') }}",
                   opts),
            "<s></s>FalseFalseNone1970-01-01 00:00");
  // Keys of ordered JSON keep their order, as Python dicts do.
  EXPECT_EQ(
      ChatTemplate("{{ messages[0] | tojson }}", "t")
          .render_ordered(
              nlohmann::ordered_json::parse(R"([{"role": "user", "content": "x", "a": 1}])"), opts),
      R"({"role": "user", "content": "x", "a": 1})");
}

TEST(Api, ConcurrentRendersShareOneTemplate) {
  ChatTemplate t(
      "{% for m in messages %}{{ m.role }}:{{ m.content | upper }};{% endfor %}{{ range(3) | sum "
      "}}",
      "t");
  json messages = json::array(
      {{{"role", "user"}, {"content", "hi"}}, {{"role", "assistant"}, {"content", "yo"}}});
  std::vector<std::thread> threads;
  std::vector<std::string> results(4);
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) results[i] = t.render(messages, {});
    });
  }
  for (auto& th : threads) th.join();
  for (const std::string& r : results) EXPECT_EQ(r, "user:HI;assistant:YO;3");
}

}  // namespace
