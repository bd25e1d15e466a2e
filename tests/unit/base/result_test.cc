#include "sandbox/base/result.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace sandrun {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Error(ErrorCode::kInvalidArgument, std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  SANDRUN_ASSIGN_OR_RETURN(int half, Half(x));
  SANDRUN_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckEven(int x) {
  SANDRUN_RETURN_IF_ERROR(Half(x));
  return Ok();
}

TEST(ResultTest, HoldsValueOrError) {
  Result<int> ok = Half(8);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 4);
  Result<int> bad = Half(3);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(ResultTest, MacrosPropagateTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);  // 6 -> 3 -> odd
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "3 is odd");
  EXPECT_TRUE(CheckEven(2));
  EXPECT_FALSE(CheckEven(1));
}

TEST(ResultTest, ErrorCarriesErrnoAndContext) {
  Error e = Error::FromErrno(ENOENT, "open /x");
  EXPECT_EQ(e.code, ErrorCode::kSyscall);
  EXPECT_EQ(e.sys_errno, ENOENT);
  EXPECT_EQ(e.message, "open /x: No such file or directory");
  e.Wrap("loading profile").Wrap("starting");
  EXPECT_EQ(e.ToString(), "starting: loading profile: open /x: No such file or directory");
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kDockerUnreachable), "docker-unreachable");
}

}  // namespace
}  // namespace sandrun
