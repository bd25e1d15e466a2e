#include "sandbox/base/duration.h"

#include <gtest/gtest.h>

namespace sandrun {
namespace {

TEST(Duration, Parses) {
  EXPECT_EQ(*ParseDurationMs("30s"), 30000);
  EXPECT_EQ(*ParseDurationMs("15m"), 900000);
  EXPECT_EQ(*ParseDurationMs("12h"), 43200000);
  EXPECT_EQ(*ParseDurationMs("7d"), 604800000);
  EXPECT_EQ(*ParseDurationMs("2w"), 1209600000);
  for (const char* bad : {"", "d", "0d", "-1d", "1.5h", "10", "3y", "1dd", " 1d", "99999999999w"}) {
    EXPECT_FALSE(ParseDurationMs(bad)) << bad;
  }
}

}  // namespace
}  // namespace sandrun
