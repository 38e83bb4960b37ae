// The benchmark's prompts, built from the target model's vocabulary so that their
// token counts are exact: synthetic prompts are sequences of plain word tokens (a
// letters-only piece that starts a word and re-tokenizes to itself), and every prompt
// is checked to satisfy encode(decode(ids)) == ids, so sending its text or its ids
// makes the server see exactly `ids` (plus the BOS a server adds to text prompts).
//
//   random         --input-len tokens (x uniform [1 - r, 1 + r] with --range-ratio r)
//                  after a --prefix-len prefix shared by all prompts
//   shared-prefix  --num-prefixes K system prompts of --prefix-len tokens, each
//                  followed by questions of --question-len tokens (num-prompts / K
//                  questions per prefix), in shuffled order
//   long-doc       a document of --doc-len-min..--doc-len-max tokens and a question of
//                  --question-len tokens; with probability --doc-repeat-rate a
//                  document already sent is asked about again
//   FILE.jsonl     one {"prompt": TEXT, "output_len": N} per line (output_len defaults
//                  to --output-len); counted with the tokenizer
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::loadgen {

class TokenSource;

struct Prompt {
  std::vector<int32_t> ids;  // exactly what the tokenizer makes of `text`
  std::string text;
  int64_t output_len = 0;
};

struct DatasetOptions {
  std::string name = "random";  // random, shared-prefix, long-doc or a .jsonl path
  int64_t num_prompts = 1000;
  int64_t input_len = 1024;
  int64_t output_len = 128;
  double range_ratio = 0;
  int64_t prefix_len = 0;
  int64_t num_prefixes = 8;
  int64_t question_len = 32;
  int64_t doc_len_min = 4096;
  int64_t doc_len_max = 32768;
  double doc_repeat_rate = 0.5;
  uint64_t seed = 0;
};

// Throws strata::Error naming the flag at fault.
void validate(const DatasetOptions& o);

// The plain word tokens of the vocabulary (ids, ascending); throws strata::Error when
// there are fewer than 8. Candidates are checked in groups, so a server is asked a
// few requests per candidate at most.
std::vector<int32_t> word_tokens(TokenSource& tok, uint64_t seed);

std::vector<Prompt> build_dataset(const DatasetOptions& o, TokenSource& tok);

}  // namespace strata::loadgen
