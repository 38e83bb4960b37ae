// --replica-file model-free: parsing (comments, blanks, duplicates, bad lines), the
// join/drain diff, and Router::reload on replicas that do not answer (nothing runs).
#include "router/replica_set.h"

#include <gtest/gtest.h>

#include <fstream>

#include "router/router.h"
#include "support/paths.h"

namespace strata::router {
namespace {

TEST(ReplicaSetTest, ParsesUrlsCommentsAndBlanks) {
  const auto urls = parse_replica_list(
      "# replicas\n"
      "http://10.0.0.1:8080\n"
      "\n"
      "  http://10.0.0.2:8080/  # trailing slash and comment\r\n"
      "http://10.0.0.1:8080\n"  // duplicate
      "http://h:1/prefix",
      "f");
  EXPECT_EQ(urls, (std::vector<std::string>{"http://10.0.0.1:8080", "http://10.0.0.2:8080",
                                            "http://h:1/prefix"}));
  EXPECT_TRUE(parse_replica_list("", "f").empty());
  EXPECT_TRUE(parse_replica_list("# only a comment\n\n", "f").empty());
}

TEST(ReplicaSetTest, NamesTheBadLine) {
  try {
    parse_replica_list("http://a:1\nftp://nope\n", "replicas.txt");
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("replicas.txt:2"), std::string::npos) << e.what();
  }
  EXPECT_ANY_THROW(read_replica_file("/nonexistent/replicas.txt"));
}

TEST(ReplicaSetTest, DiffJoinsAndDrains) {
  const auto c = diff_replicas({"a", "b", "c"}, {"c", "d", "a"});
  EXPECT_EQ(c.added, (std::vector<std::string>{"d"}));
  EXPECT_EQ(c.removed, (std::vector<std::string>{"b"}));
  EXPECT_TRUE(diff_replicas({"a"}, {"a"}).empty());
  EXPECT_EQ(merge_replicas({"a", "b"}, {"b", "c"}), (std::vector<std::string>{"a", "b", "c"}));
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// Ports 1..3 on loopback refuse connections: the prober fails fast, nothing is routed.
TEST(ReplicaSetTest, ReloadJoinsAndDrainsReplicas) {
  const std::string path = testing::scratch_dir() + "/replicas.txt";
  write(path, "http://127.0.0.1:1\nhttp://127.0.0.1:2\n");
  RouterConfig config;
  config.replica_file = path;
  config.probe_interval_s = 60;
  Router r(config);
  EXPECT_EQ(r.active_replicas(),
            (std::vector<std::string>{"http://127.0.0.1:1", "http://127.0.0.1:2"}));
  write(path, "# one left, one joined\nhttp://127.0.0.1:2\nhttp://127.0.0.1:3\n");
  r.reload();
  EXPECT_EQ(r.active_replicas(),
            (std::vector<std::string>{"http://127.0.0.1:2", "http://127.0.0.1:3"}));
  const std::string m = r.metrics_text();
  // Nothing was in flight on :1, so it drained at once and left the table.
  EXPECT_EQ(m.find("replica=\"http://127.0.0.1:1\""), std::string::npos) << m;
  EXPECT_NE(m.find("strata_router_reloads_total 1"), std::string::npos) << m;
  // A bad file or an empty one leaves the set as it was.
  write(path, "not a url\n");
  EXPECT_ANY_THROW(r.reload());
  write(path, "# nothing\n");
  EXPECT_ANY_THROW(r.reload());
  EXPECT_EQ(r.active_replicas().size(), 2u);
}

}  // namespace
}  // namespace strata::router
