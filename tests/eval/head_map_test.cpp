// Sparse-attention head maps: JSON maps, ratio cuts and their errors.
#include "eval/head_map.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace strata {
namespace {

TEST(HeadMap, ModesWinOverScores) {
  const HeadModes m = parse_head_map(
      R"({"sink": 2, "window": 32, "modes": [["full", "streaming"], ["streaming", "streaming"]],
          "scores": [[0, 1], [2, 3]]})",
      {}, 2, 2);
  EXPECT_EQ(m.sink, 2);
  EXPECT_EQ(m.window, 32);
  EXPECT_FALSE(m.is_streaming(0, 0));
  EXPECT_TRUE(m.is_streaming(0, 1));
  EXPECT_EQ(m.n_full(), 1);
}

TEST(HeadMap, ScoresCutAtTheRetrievalRatio) {
  const std::string map = R"({"scores": [[0.9, 0.1, 0.5, 0.2], [0.05, 0.8, 0.3, 0.0]]})";
  HeadMapOptions o;
  o.retrieval_ratio = 0.25;  // 2 of 8 heads
  HeadModes m = parse_head_map(map, o, 2, 4);
  EXPECT_EQ(m.n_full(), 2);
  EXPECT_FALSE(m.is_streaming(0, 0));
  EXPECT_FALSE(m.is_streaming(1, 1));
  EXPECT_EQ(m.sink, 4);  // defaults
  EXPECT_EQ(m.window, 64);
  o.retrieval_ratio = 0.5;
  o.window = 16;
  m = parse_head_map(map, o, 2, 4);
  EXPECT_EQ(m.n_full(), 4);
  EXPECT_FALSE(m.is_streaming(0, 2));
  EXPECT_FALSE(m.is_streaming(1, 2));
  EXPECT_EQ(m.window, 16);
  o.retrieval_ratio = 1.0;
  EXPECT_EQ(parse_head_map(map, o, 2, 4).n_streaming(), 0);
}

TEST(HeadMap, RejectsBadMaps) {
  HeadMapOptions o;
  o.retrieval_ratio = 0.5;
  for (const char* bad :
       {"not json", "[]", "{}", R"({"modes": [["full"]]})", R"({"modes": [["full", "half"]]})",
        R"({"scores": [["a", 1]]})", R"({"window": 0, "modes": [["full", "full"]]})",
        R"({"sink": -1, "modes": [["full", "full"]]})"}) {
    EXPECT_THROW(parse_head_map(bad, o, 1, 2), Error) << bad;
  }
  EXPECT_THROW(parse_head_map(R"({"scores": [[1, 2]]})", {}, 1, 2), Error);  // no ratio
  o.retrieval_ratio = 1.5;
  EXPECT_THROW(parse_head_map(R"({"scores": [[1, 2]]})", o, 1, 2), Error);
}

TEST(HeadMap, RatioWithoutAMapKeepsTheFirstHeadsOfEachLayer) {
  HeadMapOptions o;
  o.retrieval_ratio = 0.25;
  o.window = 256;
  const HeadModes m = resolve_head_modes(o, 3, 8);
  EXPECT_EQ(m.n_full(), 6);
  EXPECT_FALSE(m.is_streaming(2, 1));
  EXPECT_TRUE(m.is_streaming(2, 2));
  EXPECT_EQ(m.window, 256);
  EXPECT_TRUE(resolve_head_modes({}, 3, 8).dense());
}

TEST(HeadMap, JsonRoundTrip) {
  HeadMapOptions o;
  o.retrieval_ratio = 0.5;
  const HeadModes m =
      parse_head_map(R"({"sink": 1, "window": 9, "scores": [[3, 1], [2, 4]]})", o, 2, 2);
  const HeadModes again = parse_head_map(head_map_json(m, {{3, 1}, {2, 4}}), {}, 2, 2);
  EXPECT_EQ(again.streaming, m.streaming);
  EXPECT_EQ(again.sink, 1);
  EXPECT_EQ(again.window, 9);
}

}  // namespace
}  // namespace strata
