#include "runner/sequence_runner.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

namespace strata {
namespace {

int64_t pick_context(const Model& model, int64_t requested) {
  const int64_t max_ctx = model.config().context_length;
  if (requested <= 0) return max_ctx;
  return std::min(requested, max_ctx);
}

// Stream pool for one sequence: its sinks, its window and one prefill chunk.
int64_t stream_blocks(const SequenceRunnerOptions& o) {
  if (o.head_modes.n_streaming() == 0) return 0;
  return o.head_modes.stream_blocks_per_sequence(o.block_size, o.max_batch_tokens);
}

SequenceRunnerOptions resolved(SequenceRunnerOptions o, const Model& model) {
  o.head_modes = effective_head_modes(o.head_modes, o.head_map, model.config().n_layers, model.config().n_kv_heads);
  return o;
}

}  // namespace

SequenceRunner::SequenceRunner(Model& model, ThreadPool& pool, const SequenceRunnerOptions& options)
    : model_(model),
      pool_(pool),
      options_(resolved(options, model)),
      context_length_(pick_context(model, options.context_length)),
      cache_(model.kv_config((context_length_ + options_.block_size - 1) / options_.block_size,
                             options_.block_size, options_.kv_type, options_.head_modes,
                             stream_blocks(options_))),
      kv_({static_cast<int32_t>(cache_.config().n_blocks), static_cast<int32_t>(options_.block_size),
           /*prefix_cache=*/false, /*model_id=*/0, static_cast<int32_t>(cache_.config().n_stream_blocks),
           options_.head_modes.sink, options_.head_modes.window}) {
  if (options_.max_batch_tokens <= 0) throw Error("max_batch_tokens must be positive");
  const auto chunk = static_cast<size_t>(options_.max_batch_tokens);
  positions_.reserve(chunk);
  seq_index_.assign(chunk, 0);
  logit_rows_.reserve(chunk);
  history_.reserve(static_cast<size_t>(context_length_));
  seq_.block_table.reserve(static_cast<size_t>(cache_.config().n_blocks));
  seq_.stream_table.reserve(static_cast<size_t>(cache_.config().n_blocks));
  last_logits_.resize(static_cast<size_t>(model.config().n_vocab));
}

void SequenceRunner::reset() {
  kv_.free(seq_);
  history_.clear();
}

void SequenceRunner::ensure_blocks(int64_t n_tokens) {
  if (!kv_.allocate(seq_, n_tokens)) throw Error("sequence runner: KV cache full");
}

std::span<const float> SequenceRunner::feed(std::span<const int32_t> tokens,
                                            std::vector<float>* all_out) {
  if (tokens.empty()) throw Error("feed: no tokens");
  if (n_past() + static_cast<int64_t>(tokens.size()) > context_length_) {
    throw Error("context full: " + std::to_string(n_past() + static_cast<int64_t>(tokens.size())) +
                " tokens exceed the context length " + std::to_string(context_length_));
  }
  const int64_t n_vocab = model_.config().n_vocab;
  if (all_out) all_out->clear();
  size_t done = 0;
  while (done < tokens.size()) {
    const size_t n = std::min(tokens.size() - done, static_cast<size_t>(options_.max_batch_tokens));
    const auto chunk = tokens.subspan(done, n);
    const int64_t start = n_past();
    ensure_blocks(start + static_cast<int64_t>(n));
    positions_.resize(n);
    for (size_t i = 0; i < n; ++i) positions_[i] = static_cast<int32_t>(start + static_cast<int64_t>(i));
    history_.insert(history_.end(), chunk.begin(), chunk.end());
    logit_rows_.clear();
    const bool last_chunk = done + n == tokens.size();
    if (all_out) {
      for (size_t i = 0; i < n; ++i) logit_rows_.push_back(static_cast<int32_t>(i));
    } else if (last_chunk) {
      logit_rows_.push_back(static_cast<int32_t>(n - 1));
    }
    const SequenceView seq{seq_.block_table, static_cast<int32_t>(n_past()), seq_.stream_table};
    ForwardBatch batch;
    batch.tokens = chunk;
    batch.positions = positions_;
    batch.seq_index = std::span<const int32_t>(seq_index_.data(), n);
    batch.seqs = std::span<const SequenceView>(&seq, 1);
    batch.logit_rows = logit_rows_;
    const auto logits = model_.forward(batch, cache_, pool_);
    kv_.commit(seq_, history_);  // sparse: releases stream blocks that left the window
    if (all_out) all_out->insert(all_out->end(), logits.begin(), logits.end());
    if (last_chunk) {
      std::memcpy(last_logits_.data(), logits.data() + logits.size() - static_cast<size_t>(n_vocab),
                  static_cast<size_t>(n_vocab) * sizeof(float));
    }
    done += n;
  }
  if (all_out) return *all_out;
  return last_logits_;
}

std::vector<int32_t> generate(SequenceRunner& runner, std::span<const int32_t> prompt,
                              Sampler& sampler, const GenerateOptions& options,
                              const std::function<bool(int32_t)>& is_eog,
                              const std::function<bool(int32_t)>& on_token) {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(options.max_new_tokens, 0)));
  std::span<const float> logits = runner.feed(prompt);
  std::vector<float> row(logits.begin(), logits.end());
  for (int64_t i = 0; i < options.max_new_tokens; ++i) {
    TraceSpan span(options.tracer, "sample", kTraceForward);
    std::copy(logits.begin(), logits.end(), row.begin());
    const int32_t tok = sampler.sample(row, runner.history());
    span.end();
    if (!options.ignore_eos && is_eog(tok)) break;
    out.push_back(tok);
    if (!on_token(tok)) break;
    if (i + 1 == options.max_new_tokens || runner.n_past() >= runner.context_length()) break;
    logits = runner.feed(std::span<const int32_t>(&out.back(), 1));
  }
  return out;
}

}  // namespace strata
