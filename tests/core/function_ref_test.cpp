// FunctionRef: calls the referenced callable with its arguments, sees its current state
// (a reference, not a copy), and an empty one is false.
#include "core/function_ref.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(FunctionRef, CallsTheCallableWithItsArguments) {
  int calls = 0;
  auto count = [&](int by) { calls += by; };
  FunctionRef<void(int)> f = count;
  f(2);
  f(3);
  EXPECT_EQ(calls, 5);
  auto twice = [](int x) { return 2 * x; };
  FunctionRef<int(int)> g = twice;
  EXPECT_EQ(g(21), 42);
}

TEST(FunctionRef, RefersToTheCallableNotACopy) {
  struct Counter {
    int n = 0;
    int operator()() { return ++n; }
  } counter;
  FunctionRef<int()> f = counter;
  f();
  f();
  EXPECT_EQ(counter.n, 2);
}

TEST(FunctionRef, DefaultIsEmpty) {
  FunctionRef<void()> f;
  EXPECT_FALSE(f);
  auto noop = [] {};
  EXPECT_TRUE(FunctionRef<void()>(noop));
}

}  // namespace
}  // namespace strata
