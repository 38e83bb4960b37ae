// Sticky sessions' table model-free: pins, LRU eviction at the bound, forgetting a
// replica that left.
#include "router/session_table.h"

#include <gtest/gtest.h>

namespace strata::router {
namespace {

TEST(SessionTableTest, PinsAndRepins) {
  SessionTable t(4);
  EXPECT_FALSE(t.find("s1"));
  t.pin("s1", "http://a:1");
  EXPECT_EQ(t.find("s1"), "http://a:1");
  t.pin("s1", "http://b:2");
  EXPECT_EQ(t.find("s1"), "http://b:2");
  EXPECT_EQ(t.size(), 1u);
}

TEST(SessionTableTest, EvictsTheLeastRecentlyUsedAtTheBound) {
  SessionTable t(3);
  t.pin("s1", "a");
  t.pin("s2", "b");
  t.pin("s3", "c");
  EXPECT_TRUE(t.find("s1"));  // s1 is now the most recent; s2 the least
  t.pin("s4", "d");
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.evictions(), 1u);
  EXPECT_FALSE(t.find("s2"));
  EXPECT_TRUE(t.find("s1"));
  EXPECT_TRUE(t.find("s3"));
  EXPECT_TRUE(t.find("s4"));
  for (int i = 0; i < 1000; ++i) t.pin("x" + std::to_string(i), "a");
  EXPECT_EQ(t.size(), 3u);  // bounded whatever the number of clients
}

TEST(SessionTableTest, ZeroCapacityKeepsNothing) {
  SessionTable t(0);
  t.pin("s1", "a");
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.find("s1"));
}

TEST(SessionTableTest, ForgetsAReplicaThatLeft) {
  SessionTable t(8);
  t.pin("s1", "a");
  t.pin("s2", "b");
  t.pin("s3", "a");
  t.forget_replica("a");
  EXPECT_FALSE(t.find("s1"));
  EXPECT_FALSE(t.find("s3"));
  EXPECT_EQ(t.find("s2"), "b");
  EXPECT_EQ(t.size(), 1u);
}

}  // namespace
}  // namespace strata::router
