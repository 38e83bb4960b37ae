// Helpers shared by the tokenizer tests: the shared data folder, file reading, and the
// llama.cpp-style test vector files (NAME.gguf.inp / NAME.gguf.out).
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::testing {

inline std::string tokenizer_shared_dir() {
  const char* env = std::getenv("STRATA_SHARED");
  return env != nullptr ? env : STRATA_SHARED_DEFAULT;
}

inline std::string read_binary_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The test strings of a .inp file: separated by "\n__ggml_vocab_test__\n", which also
// ends the file.
inline std::vector<std::string> split_vocab_inputs(const std::string& text) {
  static const std::string kSeparator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t next = text.find(kSeparator, pos);
    if (next == std::string::npos) break;
    out.push_back(text.substr(pos, next - pos));
    pos = next + kSeparator.size();
  }
  return out;
}

// The expected ids of a .out file: one line of space-separated ids per test string.
inline std::vector<std::vector<int32_t>> parse_vocab_outputs(const std::string& text) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<int32_t> ids;
    std::istringstream fields(line);
    long value;
    while (fields >> value) ids.push_back(static_cast<int32_t>(value));
    out.push_back(std::move(ids));
  }
  return out;
}

}  // namespace strata::testing
