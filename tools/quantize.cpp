// strata quantize IN.gguf OUT.gguf --type TYPE (q8_0, q4_0, q5_k_m, iq4_xs, ...)
//   [--calib TEXT [-c N] [-t N]] [--imatrix FILE] [--save-imatrix FILE]
//   [--search] [--outliers keep|clip]
//   [--sensitivity] [--sensitivity-in FILE]
//   [--target-bpw B | --target-size BYTES] [--floor TYPE] [--plan FILE]
// --calib runs the (source) model over TEXT and collects per-input-column activation
// statistics (convert/imatrix.h) that weight the scale search (convert/weighted_quant.h).
// --sensitivity measures, per matrix, the KLD of the final logits on TEXT with only that
// matrix quantized (eval/calib_run.h); --target-bpw / --target-size picks a type per
// matrix from its ladder (convert/quant_plan.h) to minimise summed sensitivity within the
// budget and writes OUT.plan.json. docs/QUANTIZATION.md describes it all.
#include "convert/quantize.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "convert/imatrix.h"
#include "convert/quant_plan.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "eval/calib_run.h"
#include "kernels/quant/traits.h"
#include "model/model.h"
#include "tools/commands.h"

namespace strata::tools {
namespace {

struct Flags {
  std::string in, out, type, calib, imatrix, save_imatrix, outliers = "clip";
  std::string sensitivity_in, floor, plan;
  std::vector<std::string> ladder;
  bool search = false, sensitivity = false;
  double target_bpw = 0;
  uint64_t target_size = 0;
  int64_t ctx = 128;
  int threads = 0;
};

bool is_matrix(const gguf::TensorInfo& t) {
  return t.ne.size() == 2 || t.ne.size() == 3;
}

// The --ladder types that tensor t's rows divide into; F16 alone when none does (as the
// default ladder).
std::vector<DType> ladder_for(const std::vector<DType>& ladder, const gguf::TensorInfo& t) {
  std::vector<DType> out;
  for (const DType d : ladder)
    if (t.ne[0] % dtype_info(d).block_size == 0) out.push_back(d);
  if (out.empty()) out.push_back(DType::F16);
  return out;
}

std::string read_file(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(std::string(flag) + ": cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot create " + path);
  f << text;
  if (!f) throw Error("write failed: " + path);
}

std::string sensitivity_json(const Sensitivity& s) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, types] : s)
    for (const auto& [type, kld] : types) j[name][std::string(dtype_name(type))] = kld;
  return j.dump(2) + "\n";
}

Sensitivity sensitivity_from_json(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error("--sensitivity-in: not a JSON object");
  Sensitivity s;
  for (const auto& [name, types] : j.items()) {
    if (!types.is_object()) throw Error("--sensitivity-in: " + name + " is not an object");
    for (const auto& [tn, v] : types.items()) {
      const auto t = dtype_from_name(tn);
      if (!t || !v.is_number())
        throw Error("--sensitivity-in: " + name + ": bad entry '" + tn + "'");
      s[name][*t] = v.get<double>();
    }
  }
  return s;
}

void print_sensitivity(const Sensitivity& s) {
  std::vector<DType> cols;
  for (const auto& [name, types] : s)
    for (const auto& [t, k] : types)
      if (std::find(cols.begin(), cols.end(), t) == cols.end()) cols.push_back(t);
  std::sort(cols.begin(), cols.end(), [](DType a, DType b) {
    return dtype_info(a).type_size * 1.0 / dtype_info(a).block_size <
           dtype_info(b).type_size * 1.0 / dtype_info(b).block_size;
  });
  std::printf("%-28s", "tensor (mean KLD alone)");
  for (const DType t : cols) std::printf(" %12s", std::string(dtype_name(t)).c_str());
  std::printf("\n");
  for (const auto& [name, types] : s) {
    std::printf("%-28s", name.c_str());
    for (const DType t : cols) {
      const auto it = types.find(t);
      if (it == types.end())
        std::printf(" %12s", "-");
      else
        std::printf(" %12.6f", it->second);
    }
    std::printf("\n");
  }
}

void run(const Flags& f) {
  if (f.target_bpw > 0 && f.target_size > 0)
    throw Error("give at most one of --target-bpw and --target-size");
  const bool planning = f.target_bpw > 0 || f.target_size > 0;
  if (f.target_bpw < 0) throw Error("--target-bpw must be positive");
  if (planning && !f.plan.empty())
    throw Error("--plan and --target-bpw/--target-size exclude each other");
  if (f.type.empty() && !planning && f.plan.empty())
    throw Error("--type is required (unless --target-bpw, --target-size or --plan is given)");
  if (!f.calib.empty() && !f.imatrix.empty())
    throw Error("give at most one of --calib and --imatrix");
  if ((f.sensitivity || planning) && f.calib.empty() && f.sensitivity_in.empty())
    throw Error(
        "--sensitivity and --target-bpw/--target-size need --calib TEXT (or --sensitivity-in)");
  if (!f.save_imatrix.empty() && f.calib.empty()) throw Error("--save-imatrix needs --calib TEXT");
  if (f.outliers != "clip" && f.outliers != "keep")
    throw Error("--outliers: expected keep or clip, got '" + f.outliers + "'");

  std::vector<DType> ladder;  // --ladder: the plan's candidate types, checked before any run
  for (const std::string& name : f.ladder) {
    const auto t = dtype_from_name(name);
    if (!t) throw Error("--ladder: unknown type '" + name + "'");
    kernels::type_traits(*t);  // throws for types without kernels
    ladder.push_back(*t);
  }
  if (!ladder.empty() && !planning) throw Error("--ladder needs --target-bpw or --target-size");

  QuantizeOptions o;
  if (!f.type.empty()) {
    const auto scheme = parse_quant_scheme(f.type);
    if (!scheme) throw Error("--type: unknown type '" + f.type + "'");
    o.scheme = *scheme;
  }
  o.search = f.search;
  o.outliers = f.outliers == "keep" ? OutlierPolicy::keep : OutlierPolicy::clip;
  const int threads = f.threads > 0 ? f.threads : ThreadPool::default_threads();
  const auto src = gguf::GgufFile::open(f.in);

  Imatrix im;
  CalibWindows windows;
  std::vector<float> ref;
  std::unique_ptr<Model> model;  // the source model, kept for the sensitivity probes
  if (!f.calib.empty()) {
    model = Model::load(f.in);
    windows = calib_windows(*model, f.calib, f.ctx);
    ImatrixCollector collector(*model, im);
    ref = run_windows(*model, windows, threads, &collector);
    std::fprintf(stderr, "calibration: %lld windows of %lld tokens, %zu tensors observed\n",
                 static_cast<long long>(windows.plan.n_chunks),
                 static_cast<long long>(windows.plan.n_ctx), im.tensors().size());
    if (!f.save_imatrix.empty()) {
      im.save(f.save_imatrix);
      std::fprintf(stderr, "wrote %s\n", f.save_imatrix.c_str());
    }
    o.imatrix = &im;
  } else if (!f.imatrix.empty()) {
    im = Imatrix::load(f.imatrix);
    o.imatrix = &im;
  }

  const std::string classifier = classifier_name(src);
  if (f.sensitivity || planning) {
    Sensitivity sens;
    if (!f.sensitivity_in.empty()) {
      sens = sensitivity_from_json(read_file(f.sensitivity_in, "--sensitivity-in"));
    } else {
      std::map<std::string, std::vector<DType>> cand;
      for (const auto& t : src.tensors()) {
        if (!is_matrix(t)) continue;
        if (planning) {
          cand[t.name] = ladder.empty() ? type_ladder(t.ne[0]) : ladder_for(ladder, t);
        } else {
          const DType want = choose_tensor_type(t.ne, o.scheme.type, false);
          if (want != t.type) cand[t.name] = {want};
        }
      }
      sens = measure_sensitivity(*model, src, cand, o, windows, ref, threads,
                                 [](const std::string& n, DType t, double k) {
                                   std::fprintf(stderr, "  %s %s: KLD %.6f\n", n.c_str(),
                                                std::string(dtype_name(t)).c_str(), k);
                                 });
      const std::string path = f.out + ".sensitivity.json";
      write_file(path, sensitivity_json(sens));
      std::fprintf(stderr, "wrote %s\n", path.c_str());
    }
    print_sensitivity(sens);
    if (planning) {
      std::vector<PlanTensor> pts;
      for (const auto& t : src.tensors()) {
        if (!is_matrix(t)) continue;
        const auto it = sens.find(t.name);
        if (it == sens.end()) throw Error("sensitivity: no measurement for " + t.name);
        pts.push_back(
            {t.name, t.ne, t.name == "token_embd.weight" || t.name == classifier, it->second});
      }
      std::optional<DType> floor;
      if (!f.floor.empty()) {
        floor = dtype_from_name(f.floor);
        if (!floor) throw Error("--floor: unknown type '" + f.floor + "'");
      }
      const uint64_t budget = f.target_size > 0 ? f.target_size : budget_for_bpw(f.target_bpw, pts);
      const QuantPlan plan = make_quant_plan(pts, budget, floor);
      if (plan.floor_dropped)
        std::fprintf(stderr,
                     "warning: the embedding/classifier floor does not fit the budget; "
                     "lifted\n");
      const std::string path = f.out + ".plan.json";
      write_file(path, plan_to_json(plan));
      std::printf(
          "plan: %llu of %llu bytes, %.4f bits per weight, summed sensitivity %.6f "
          "(%s)\n",
          static_cast<unsigned long long>(plan.total_bytes()),
          static_cast<unsigned long long>(budget), plan.bpw(), plan.total_sensitivity(),
          path.c_str());
      for (const auto& e : plan.tensors)
        std::printf("  %-28s %-6s %.6f\n", e.name.c_str(), std::string(dtype_name(e.type)).c_str(),
                    e.sensitivity);
      o.tensor_types = plan.types();
      if (f.type.empty()) o.scheme = {DType::Q8_0, false};  // general.file_type only
    }
  }
  if (!f.plan.empty()) {
    o.tensor_types = plan_from_json(read_file(f.plan, "--plan")).types();
    if (f.type.empty()) o.scheme = {DType::Q8_0, false};
  }
  quantize_model(f.in, f.out, o);
  // Bits per weight over the matrices, the figure --target-bpw budgets.
  const auto out = gguf::GgufFile::open(f.out);
  uint64_t bytes = 0, n = 0;
  for (const auto& t : out.tensors())
    if (is_matrix(t)) bytes += t.n_bytes, n += t.n_elements;
  std::printf("wrote %s: matrices %.4f bits per weight (%llu bytes)\n", f.out.c_str(),
              n ? 8.0 * static_cast<double>(bytes) / static_cast<double>(n) : 0.0,
              static_cast<unsigned long long>(bytes));
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("quantize", "re-encode a model's weight matrices");
  cmd->add_option("input", f->in, "input GGUF")->required();
  cmd->add_option("output", f->out, "output GGUF")->required();
  cmd->add_option("--type", f->type,
                  "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, "
                  "q6_k, iq4_xs, or the mixes q3_k_m, q4_k_m, q5_k_m");
  cmd->add_option("--calib", f->calib,
                  "calibration text: activation statistics weight the scale search");
  cmd->add_option("-c,--ctx", f->ctx, "calibration window in tokens (default 128)");
  cmd->add_option("-t,--threads", f->threads, "threads for the calibration runs");
  cmd->add_option("--imatrix", f->imatrix, "activation statistics saved by --save-imatrix");
  cmd->add_option("--save-imatrix", f->save_imatrix, "save --calib's activation statistics");
  cmd->add_flag("--search", f->search,
                "weighted scale search (unit weights) even without --calib/--imatrix");
  cmd->add_option("--outliers", f->outliers,
                  "scale search: keep (never clip a block's largest value) or clip (default)");
  cmd->add_flag("--sensitivity", f->sensitivity,
                "per-tensor KLD with only that tensor quantized (needs --calib); writes "
                "OUT.sensitivity.json");
  cmd->add_option("--sensitivity-in", f->sensitivity_in, "reuse a OUT.sensitivity.json");
  cmd->add_option("--target-bpw", f->target_bpw,
                  "bits per weight over the matrices: a per-tensor plan (needs --calib)");
  cmd->add_option("--ladder", f->ladder,
                  "the plan's candidate types, comma-separated (default: Q2_K..Q8_0, F16 for "
                  "256-multiple rows; fewer types, fewer sensitivity probes)")
      ->delimiter(',');
  cmd->add_option("--target-size", f->target_size, "bytes of the matrices: as --target-bpw");
  cmd->add_option("--floor", f->floor,
                  "lowest type of token_embd and the classifier in a plan (default q6_k for "
                  "256-multiple rows, else q8_0)");
  cmd->add_option("--plan", f->plan, "apply a plan JSON written by --target-bpw");
  cmd->callback([f] { run(*f); });
}

}  // namespace strata::tools
