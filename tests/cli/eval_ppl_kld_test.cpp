// strata eval ppl / eval kld end to end on the tiny real model.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/paths.h"
#include "support/process.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

using testing::run_command;
using testing::strata_bin;

std::string story() {
  const std::string path = testing::scratch_dir() + "/eval_story.txt";
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < 6; ++i)
    out << "Once upon a time, there was a little girl named Lily. She had a cat who liked to "
           "play. One day, Lily and her cat went to the park. They saw a big red ball. ";
  return path;
}

double field(const std::string& out, const std::string& key) {
  const auto at = out.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(out.substr(at + key.size()));
}

TEST(EvalCli, PplAndSelfKld) {
  const std::string m = testing::aidreams_gguf(), text = story();
  auto r = run_command(strata_bin() + " eval ppl -m " + m + " -f " + text + " -c 32 -t 1 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const double ppl = field(r.out, "\nppl ");
  EXPECT_GT(ppl, 1.0) << r.out;
  EXPECT_LT(ppl, 512.0) << r.out;  // better than uniform over the 512-token vocabulary

  // The model against itself: KLD 0, full agreement, whether side by side or saved.
  r = run_command(strata_bin() + " eval kld -m " + m + " --ref-model " + m + " -f " + text +
                  " -c 32 -t 1 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("kld        mean 0.000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("top1 agreement 100.0000%"), std::string::npos) << r.out;
  const std::string ref = testing::scratch_dir() + "/eval_ref.bin";
  r = run_command(strata_bin() + " eval kld -m " + m + " -f " + text + " -c 32 --save-logits " +
                  ref + " -t 1 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = run_command(strata_bin() + " eval kld -m " + m + " --ref-logits " + ref + " -t 1 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("top1 agreement 100.0000%"), std::string::npos) << r.out;
  EXPECT_NEAR(field(r.out, "\nppl "), ppl, 1e-3 * ppl) << r.out;

  // A truncated reference file is an error naming the file, not a crash.
  { std::ofstream(ref, std::ios::binary | std::ios::trunc) << "STRLGT01xx"; }
  r = run_command(strata_bin() + " eval kld -m " + m + " --ref-logits " + ref + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("eval_ref.bin"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace strata
