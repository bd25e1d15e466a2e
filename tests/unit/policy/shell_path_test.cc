// The gateway shell and PATH rules (runner/policy/shell_path.h).
#include "runner/policy/shell_path.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sandbox/executors/path_search.h"

namespace sandrun::policy {
namespace {

struct ShellCase {
  const char* name;
  const char* shell_env;  // nullptr: unset
  std::vector<std::string> on_path;
  std::string want;
};

class SelectShellTest : public ::testing::TestWithParam<ShellCase> {};

TEST_P(SelectShellTest, Selects) {
  const ShellCase& c = GetParam();
  PathLookup lookup = [&](std::string_view name) -> std::string {
    for (const auto& p : c.on_path) {
      if (std::filesystem::path(p).filename() == name) return p;
    }
    return "";
  };
  EXPECT_EQ(SelectShell(c.shell_env, lookup), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, SelectShellTest,
    ::testing::Values(
        ShellCase{"Bash", "/bin/bash", {"/usr/bin/bash"}, "/bin/bash"},
        ShellCase{"Zsh", "/usr/bin/zsh", {}, "/usr/bin/zsh"},
        ShellCase{"Trimmed", "  /bin/bash\n", {}, "/bin/bash"},
        ShellCase{
            "FishPrefersBash", "/usr/bin/fish", {"/usr/bin/sh", "/usr/bin/bash"}, "/usr/bin/bash"},
        ShellCase{"FishThenSh", "/usr/local/bin/fish", {"/bin/sh"}, "/bin/sh"},
        ShellCase{"FishAlone", "/usr/bin/fish", {}, "/usr/bin/fish"},
        ShellCase{"BareFish", "fish", {"/bin/bash"}, "/bin/bash"},
        ShellCase{"UnsetIsSh", nullptr, {"/usr/bin/sh"}, "/usr/bin/sh"},
        ShellCase{"EmptyIsSh", "   ", {}, "/bin/sh"},
        ShellCase{"UnsetNoShOnPath", nullptr, {}, "/bin/sh"},
        ShellCase{"BareNameResolved", "bash", {"/opt/bin/bash"}, "/opt/bin/bash"},
        ShellCase{"BareNameUnresolved", "ksh", {}, "ksh"},
        ShellCase{"FishLookalike", "/usr/bin/fishy", {"/bin/bash"}, "/usr/bin/fishy"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(SelectShellTest, RealPathLookup) {
  std::string sh = SelectShell(nullptr, PathLookupIn("/nonexistent::/bin"));
  EXPECT_EQ(sh, "/bin/sh");
  EXPECT_EQ(exec::FindExecutable("sh", "/nonexistent:/bin"), "/bin/sh");
  EXPECT_EQ(exec::FindExecutable("sh", ""), "");
  EXPECT_EQ(exec::FindExecutable("passwd", "/etc"), "") << "not executable";
  EXPECT_EQ(exec::FindExecutable("bin", "/"), "") << "a directory";
  EXPECT_EQ(exec::FindExecutable("/bin/sh", ""), "/bin/sh");
}

struct ShellMergeCase {
  const char* name;
  std::string login;
  std::string base;
  std::vector<std::string> prepend;
  std::string want;
};

class ShellMergePathTest : public ::testing::TestWithParam<ShellMergeCase> {};

TEST_P(ShellMergePathTest, Merges) {
  const ShellMergeCase& c = GetParam();
  EXPECT_EQ(MergePath(c.login, c.base, c.prepend), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ShellMergePathTest,
    ::testing::Values(
        ShellMergeCase{"NothingToMerge", "", "/usr/bin:/bin", {}, "/usr/bin:/bin"},
        ShellMergeCase{"NothingToMergeKeepsBaseAsIs", "", "/usr/bin::/bin", {}, "/usr/bin::/bin"},
        ShellMergeCase{
            "LoginFirst", "/opt/a:/usr/bin", "/usr/bin:/bin", {}, "/opt/a:/usr/bin:/bin"},
        ShellMergeCase{"Dedupe", "/a:/b:/a", "/b:/c:/c", {}, "/a:/b:/c"},
        ShellMergeCase{"EmptyEntriesDropped", ":/a::", ":/b:", {}, "/a:/b"},
        ShellMergeCase{"EntriesTrimmed", " /a : /b", "/b ", {}, "/a:/b"},
        ShellMergeCase{"EmptyBase", "/a:/b", "", {}, "/a:/b"},
        ShellMergeCase{"OnlySeparatorsInLogin", "::", "/usr/bin::/bin", {}, "/usr/bin::/bin"},
        ShellMergeCase{"PrependFirstOfAll", "/l", "/b", {"/p1", "/p2"}, "/p1:/p2:/l:/b"},
        ShellMergeCase{"PrependTrimmedAndDeduped", "", "/b", {" /p ", "/p", "", "  "}, "/p:/b"},
        ShellMergeCase{"PrependMovesExistingEntryForward", "/x:/y", "/z", {"/y"}, "/y:/x:/z"},
        ShellMergeCase{"PrependWithColon", "", "/b", {"/p:/q", "/q"}, "/p:/q:/b"},
        ShellMergeCase{"RelativeEntriesKept", "bin", ".", {}, "bin:."}),
    [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace sandrun::policy
