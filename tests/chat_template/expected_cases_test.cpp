// Renders every case of ../shared/templates/expected.json (real models' chat templates,
// rendered by a reference Jinja implementation) and requires byte-identical output.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "chat_template/chat_template.h"
#include "core/error.h"

namespace {

using nlohmann::ordered_json;
using strata::chat::ChatTemplate;
using strata::chat::RenderOptions;

std::string shared_dir() {
  if (const char* env = std::getenv("STRATA_SHARED")) return env;
  return STRATA_SHARED_DEFAULT;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// 2026-01-15 12:00:00 UTC, the clock the reference outputs were rendered with.
std::time_t pinned_clock() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 15;
  tm.tm_hour = 12;
  return timegm(&tm);
}

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

TEST(ExpectedCases, AllTemplatesRenderByteForByte) {
  const std::string dir = shared_dir() + "/templates/";
  ordered_json spec = ordered_json::parse(read_file(dir + "expected.json"));
  const ordered_json& conversations = spec["conversations"];
  std::map<std::string, ChatTemplate> templates;
  std::vector<std::string> failures;
  size_t passed = 0, total = 0;
  for (const ordered_json& c : spec["cases"]) {
    ++total;
    const std::string file = c["template"];
    const std::string label =
        file + " / " + c["conversation"].get<std::string>() +
        " / add_generation_prompt=" + (c["add_generation_prompt"].get<bool>() ? "true" : "false");
    try {
      auto it = templates.find(file);
      if (it == templates.end())
        it = templates.emplace(file, ChatTemplate(read_file(dir + file), file)).first;
      RenderOptions opts;
      opts.add_generation_prompt = c["add_generation_prompt"];
      opts.bos_token = c["bos_token"];
      opts.eos_token = c["eos_token"];
      opts.now = pinned_clock();
      std::string got =
          it->second.render_ordered(conversations[c["conversation"].get<std::string>()], opts);
      const std::string expected = c["expected"];
      if (got == expected) {
        ++passed;
        continue;
      }
      size_t at = 0;
      while (at < got.size() && at < expected.size() && got[at] == expected[at]) ++at;
      size_t from = at > 40 ? at - 40 : 0;
      failures.push_back(label + ": first difference at byte " + std::to_string(at) +
                         "\n    expected: ..." + escaped(expected.substr(from, 100)) +
                         "\n    got:      ..." + escaped(got.substr(from, 100)));
    } catch (const std::exception& e) {
      failures.push_back(label + ": error: " + e.what());
    }
  }
  std::printf("%zu/%zu template cases pass\n", passed, total);
  std::string report;
  for (const std::string& f : failures) report += "  " + f + "\n";
  EXPECT_EQ(passed, total) << "failing cases:\n" << report;
}

}  // namespace
