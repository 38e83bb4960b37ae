// Loopback throughput of the KV transports (docs/DISAGGREGATION.md, "Transports"): one
// encoded message of 1, 16 or 256 MiB sent and answered, end to end: connect, move the
// bytes, the receiver's checksum and decode (decode_kv_message copies the payload out),
// an empty handler, the reply. BM_Decode is the receiver's decode alone, so the
// difference is what the transport itself costs. Real time (the receiver has its own
// thread); bytes/s counts the wire bytes.
//
//   build/bench/kv_transport_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only
// (add --benchmark_filter=BM_Tcp and the like for one transport)
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "disagg/kv_format.h"
#include "disagg/tcp_transport.h"
#ifdef STRATA_HAVE_UCX
#include "disagg/ucx_transport.h"
#endif

namespace {

using namespace strata::disagg;

// A message of about `mib` MiB: `mib` blocks of one layer with 512 KiB K and V.
std::vector<uint8_t> message_of(int mib) {
  KvMessage m;
  m.model_fingerprint = 7;
  m.block_size = 16;
  m.layers = {{1, 512u << 10, 512u << 10}};
  std::optional<strata::BlockKey> parent;
  for (int b = 0; b < mib; ++b) {
    for (int t = 0; t < 16; ++t) m.tokens.push_back(b * 16 + t);
    parent = strata::chain_block_key(
        parent, std::span<const int32_t>(m.tokens).subspan(static_cast<size_t>(b) * 16, 16), m.salt,
        7);
    m.keys.push_back(*parent);
  }
  m.payload.resize(static_cast<size_t>(mib) * m.block_payload_bytes());
  for (size_t i = 0; i < m.payload.size(); i += 4096) m.payload[i] = static_cast<uint8_t>(i);
  return encode_kv_message(m);
}

std::string handle(KvMessage m) {
  return std::to_string(m.keys.size());
}

void report(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_Tcp(benchmark::State& state) {
  const auto bytes = message_of(static_cast<int>(state.range(0)));
  TcpTransportOptions o;
  o.io_timeout_s = 30;
  TcpKvReceiver receiver("127.0.0.1", 0, o, handle);
  for (auto _ : state) send_kv_message("127.0.0.1", receiver.port(), bytes, o);
  report(state, bytes.size());
}

#ifdef STRATA_HAVE_UCX
// tls: UCX's transports ("tcp": its TCP transport; "": its own choice, here shared
// memory and CMA within the node).
void ucx(benchmark::State& state, const std::string& tls) {
  const auto bytes = message_of(static_cast<int>(state.range(0)));
  UcxTransportOptions o;
  o.io_timeout_s = 30;
  o.tls = tls;
  UcxKvReceiver receiver("127.0.0.1", 0, o, handle);
  UcxKvSender sender(o);
  for (auto _ : state) sender.send("127.0.0.1", receiver.port(), bytes);
  report(state, bytes.size());
}
void BM_UcxTcp(benchmark::State& state) {
  ucx(state, "tcp");
}
void BM_UcxDefault(benchmark::State& state) {
  ucx(state, "");
}
#endif

void BM_Decode(benchmark::State& state) {
  const auto bytes = message_of(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(decode_kv_message(bytes).payload.data());
  report(state, bytes.size());
}

#define SIZES ->Arg(0)->Arg(1)->Arg(16)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime()
BENCHMARK(BM_Decode) SIZES;
BENCHMARK(BM_Tcp) SIZES;
#ifdef STRATA_HAVE_UCX
BENCHMARK(BM_UcxTcp) SIZES;
BENCHMARK(BM_UcxDefault) SIZES;
#endif

}  // namespace

BENCHMARK_MAIN();
