// Converts llama2.c checkpoints and tokenizers (legacy format, see ../shared/README.md)
// into a GGUF of architecture `llama` with the vocabulary embedded, following the
// GGUF conventions for tensor names, metadata keys and token types.
#pragma once

#include <string>

namespace strata {

struct Llama2cConvertOptions {
  std::string checkpoint_path;
  std::string tokenizer_path;
  std::string output_path;
  std::string model_name;  // general.name; defaults to the checkpoint's file stem
};

void convert_llama2c(const Llama2cConvertOptions& options);

}  // namespace strata
