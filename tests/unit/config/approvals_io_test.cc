// Tests of the approvals file on disk: load, update, corrupt files moved aside, permissions,
// symlinks, locking across processes; and the allowlist edit helpers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runner/config/approvals_file.h"

namespace sandrun::config {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

// ---------------------------------------------------------------------------------------------
// Files: load, update, corrupt files, permissions, symlinks, locking.

class ApprovalsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-approvals-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    root_ = templ;
    path_ = ApprovalsPath(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Write(const std::string& path, const std::string& text, mode_t mode = 0600) {
    std::ofstream(path, std::ios::binary) << text;
    ::chmod(path.c_str(), mode);
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Names in the directory, sorted.
  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(root_)) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::string> NamesStartingWith(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const std::string& n : Names()) {
      if (n.starts_with(prefix)) out.push_back(n);
    }
    return out;
  }
  static mode_t Mode(const std::string& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    return st.st_mode & 07777;
  }

  std::string root_, path_;
};

TEST_F(ApprovalsFileTest, PathIsInTheStateDir) {
  EXPECT_EQ(ApprovalsPath("/home/u/.sandrun"), "/home/u/.sandrun/exec-approvals.json");
}

TEST_F(ApprovalsFileTest, MissingFileIsEmpty) {
  auto loaded = LoadApprovals(path_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_FALSE(loaded->existed);
  EXPECT_EQ(loaded->file, ApprovalsFile{});
  EXPECT_THAT(loaded->warnings, IsEmpty());
  auto in_missing_dir = LoadApprovals(root_ + "/nope/exec-approvals.json");
  ASSERT_TRUE(in_missing_dir) << in_missing_dir.error().message;
  EXPECT_FALSE(in_missing_dir->existed);
}

TEST_F(ApprovalsFileTest, LoadsWithNormalisationWarnings) {
  Write(path_, R"({"version":1,"agents":{"main":{"ask":"Always","allowlist":["/bin/ls"]}}})");
  auto loaded = LoadApprovals(path_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_TRUE(loaded->existed);
  ASSERT_EQ(loaded->file.agents["main"].allowlist.size(), 1u);
  ASSERT_EQ(loaded->warnings.size(), 1u);
  EXPECT_THAT(loaded->warnings[0], StartsWith(path_ + ":1:38: agents.main.ask: expected"));
}

TEST_F(ApprovalsFileTest, WideModeIsAWarning) {
  Write(path_, R"({"version":1})", 0644);
  auto loaded = LoadApprovals(path_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->warnings.size(), 1u);
  EXPECT_THAT(loaded->warnings[0], HasSubstr("has mode 0644, wider than 0600"));
  EXPECT_THAT(loaded->warnings[0], HasSubstr("chmod 600 " + path_));
  // A rewrite makes it private even when nothing else changes.
  ASSERT_TRUE(UpdateApprovals(path_, [](ApprovalsFile&) { return Ok(); }));
  EXPECT_EQ(Mode(path_), 0600u);
  EXPECT_THAT(LoadApprovals(path_)->warnings, IsEmpty());
}

TEST_F(ApprovalsFileTest, CorruptFileIsMovedAsideAndReported) {
  const std::string corrupt = "{\n  \"version\": 1,\n  \"agents\": {\"main\" {}}\n}\n\xff tail";
  Write(path_, corrupt);
  auto loaded = LoadApprovals(path_);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code, ErrorCode::kInvalidArgument);
  std::vector<std::string> aside = NamesStartingWith("exec-approvals.json.corrupt-");
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_THAT(aside[0], MatchesRegex("exec-approvals\\.json\\.corrupt-[0-9]{13}"));
  EXPECT_EQ(loaded.error().message,
            path_ + ":3:21: Missing a colon after a name of object member.; the file was kept as " +
                root_ + "/" + aside[0] + " and a fresh one will be started");
  EXPECT_EQ(Read(root_ + "/" + aside[0]), corrupt);  // byte for byte
  EXPECT_FALSE(std::filesystem::exists(path_));
  // The next load starts fresh; the next update writes a new file next to the kept one.
  auto fresh = LoadApprovals(path_);
  ASSERT_TRUE(fresh) << fresh.error().message;
  EXPECT_FALSE(fresh->existed);
  auto updated = UpdateApprovals(path_, [](ApprovalsFile& f) {
    AddAllowlistEntry(f, "main", "/bin/ls", "operator", 1);
    return Ok();
  });
  ASSERT_TRUE(updated) << updated.error().message;
  EXPECT_EQ(Read(root_ + "/" + aside[0]), corrupt);
  EXPECT_EQ(LoadApprovals(path_)->file.agents["main"].allowlist.size(), 1u);
}

TEST_F(ApprovalsFileTest, UnknownVersionIsMovedAsideToo) {
  const std::string v2 = "{\"version\": 2, \"agents\": {\"main\": {\"allowlist\": [\"/x\"]}}}";
  Write(path_, v2);
  auto loaded = LoadApprovals(path_);
  ASSERT_FALSE(loaded);
  EXPECT_THAT(loaded.error().message,
              StartsWith(path_ +
                         ":1:13: version: unsupported version 2 (only 1 is known); "
                         "the file was kept as " +
                         path_ + ".corrupt-"));
  std::vector<std::string> aside = NamesStartingWith("exec-approvals.json.corrupt-");
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(Read(root_ + "/" + aside[0]), v2);
}

TEST_F(ApprovalsFileTest, UpdateOfCorruptFileMovesItAsideAndWritesNothing) {
  Write(path_, "{\"version\": 1, \"agents\": []}");
  bool called = false;
  auto updated = UpdateApprovals(path_, [&](ApprovalsFile&) {
    called = true;
    return Ok();
  });
  ASSERT_FALSE(updated);
  EXPECT_FALSE(called);
  EXPECT_THAT(updated.error().message,
              StartsWith(path_ + ":1:26: agents: expected an object, got an array; the file was "
                                 "kept as "));
  EXPECT_FALSE(std::filesystem::exists(path_));
  std::vector<std::string> aside = NamesStartingWith("exec-approvals.json.corrupt-");
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(Read(root_ + "/" + aside[0]), "{\"version\": 1, \"agents\": []}");
}

TEST_F(ApprovalsFileTest, TwoCorruptFilesInOneMillisecondBothKept) {
  Write(path_, "{");
  ASSERT_FALSE(LoadApprovals(path_));
  Write(path_, "[");
  ASSERT_FALSE(LoadApprovals(path_));
  EXPECT_EQ(NamesStartingWith("exec-approvals.json.corrupt-").size(), 2u);
}

TEST_F(ApprovalsFileTest, SymlinkedFileIsRefused) {
  std::string target = root_ + "/elsewhere.json";
  Write(target, R"({"version":1})");
  ASSERT_EQ(::symlink(target.c_str(), path_.c_str()), 0);
  auto loaded = LoadApprovals(path_);
  ASSERT_FALSE(loaded);
  EXPECT_THAT(loaded.error().message, HasSubstr(path_ + " is a symlink; refusing"));
  auto updated = UpdateApprovals(path_, [](ApprovalsFile& f) {
    AddAllowlistEntry(f, "main", "/bin/ls", "", 1);
    return Ok();
  });
  ASSERT_FALSE(updated);
  EXPECT_THAT(updated.error().message, HasSubstr("is a symlink"));
  EXPECT_EQ(Read(target), R"({"version":1})");
  EXPECT_TRUE(std::filesystem::is_symlink(path_));
}

TEST_F(ApprovalsFileTest, DanglingSymlinkIsRefused) {
  ASSERT_EQ(::symlink((root_ + "/missing").c_str(), path_.c_str()), 0);
  EXPECT_FALSE(LoadApprovals(path_));
  EXPECT_FALSE(UpdateApprovals(path_, [](ApprovalsFile&) { return Ok(); }));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/missing"));
}

TEST_F(ApprovalsFileTest, SymlinkedDirectoryIsRefused) {
  std::string real = root_ + "/real";
  std::string link = root_ + "/link";
  ASSERT_TRUE(std::filesystem::create_directory(real));
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  auto loaded = LoadApprovals(ApprovalsPath(link));
  ASSERT_FALSE(loaded);
  EXPECT_THAT(loaded.error().message, HasSubstr(link + " is a symlink"));
  EXPECT_FALSE(UpdateApprovals(ApprovalsPath(link), [](ApprovalsFile&) { return Ok(); }));
  EXPECT_TRUE(std::filesystem::is_empty(real));
}

TEST_F(ApprovalsFileTest, SymlinkedLockIsRefused) {
  std::string target = root_ + "/victim";
  Write(target, "keep");
  ASSERT_EQ(::symlink(target.c_str(), (path_ + ".lock").c_str()), 0);
  auto updated = UpdateApprovals(path_, [](ApprovalsFile&) { return Ok(); });
  ASSERT_FALSE(updated);
  EXPECT_THAT(updated.error().message, HasSubstr(".lock is not a regular file"));
  EXPECT_EQ(Read(target), "keep");
}

TEST_F(ApprovalsFileTest, DirectoryInPlaceOfTheFileIsRefused) {
  ASSERT_TRUE(std::filesystem::create_directory(path_));
  EXPECT_THAT(LoadApprovals(path_).error().message, HasSubstr("is not a regular file"));
}

TEST_F(ApprovalsFileTest, UpdateCreatesAPrivateFileAndDirectory) {
  std::string dir = root_ + "/state";
  std::string path = ApprovalsPath(dir);
  auto updated = UpdateApprovals(path, [](ApprovalsFile& f) {
    f.defaults.security = Security::kAllowlist;
    EXPECT_TRUE(AddAllowlistEntry(f, "main", "/usr/bin/rg", "allow-always", 1737150000000));
    return Ok();
  });
  ASSERT_TRUE(updated) << updated.error().message;
  EXPECT_EQ(Mode(dir), 0700u);
  EXPECT_EQ(Mode(path), 0600u);
  EXPECT_EQ(Mode(path + ".lock"), 0600u);
  EXPECT_EQ(Read(path), SerializeApprovals(*updated));
  auto loaded = LoadApprovals(path);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->file, *updated);
  EXPECT_THAT(loaded->warnings, IsEmpty());
}

TEST_F(ApprovalsFileTest, MutateErrorWritesNothing) {
  Write(path_, "{\"version\":1}");
  auto updated = UpdateApprovals(path_, [](ApprovalsFile& f) -> Status {
    AddAllowlistEntry(f, "main", "/bin/ls", "", 1);
    return Error(ErrorCode::kConflict, "no such approval");
  });
  ASSERT_FALSE(updated);
  EXPECT_EQ(updated.error().message, "no such approval");
  EXPECT_EQ(Read(path_), "{\"version\":1}");
}

TEST_F(ApprovalsFileTest, UnchangedFileIsNotRewritten) {
  ASSERT_TRUE(UpdateApprovals(path_, [](ApprovalsFile& f) {
    AddAllowlistEntry(f, "main", "/bin/ls", "", 1);
    return Ok();
  }));
  struct stat before {
  }, after{};
  ASSERT_EQ(::stat(path_.c_str(), &before), 0);
  ASSERT_TRUE(UpdateApprovals(path_, [](ApprovalsFile& f) {
    EXPECT_FALSE(AddAllowlistEntry(f, "main", "/BIN/LS", "", 2));
    return Ok();
  }));
  ASSERT_EQ(::stat(path_.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
}

TEST_F(ApprovalsFileTest, CrashBeforeRenameLeavesTheOldFileAndNoTempsAfterwards) {
  ASSERT_TRUE(UpdateApprovals(path_, [](ApprovalsFile& f) {
    AddAllowlistEntry(f, "main", "/bin/old", "", 1);
    return Ok();
  }));
  const std::string old_text = Read(path_);
  // What a writer killed between its temp write and its rename leaves: a half-written temp file
  // (with our own pid, so the next writer's first temp name is taken too).
  const std::string stray = path_ + ".tmp-" + std::to_string(::getpid()) + "-0";
  const std::string stray2 = path_ + ".tmp-99999-7";
  Write(stray, "{\"version\": 1, \"agents\": {\"main\": {\"allowl");
  Write(stray2, "");
  auto loaded = LoadApprovals(path_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(Read(path_), old_text);
  ASSERT_EQ(loaded->file.agents["main"].allowlist.size(), 1u);

  ASSERT_TRUE(UpdateApprovals(path_, [](ApprovalsFile& f) {
    AddAllowlistEntry(f, "main", "/bin/new", "", 2);
    return Ok();
  }));
  EXPECT_THAT(NamesStartingWith("exec-approvals.json.tmp-"), IsEmpty());
  EXPECT_EQ(Names(), (std::vector<std::string>{"exec-approvals.json", "exec-approvals.json.lock"}));
  EXPECT_EQ(LoadApprovals(path_)->file.agents["main"].allowlist.size(), 2u);
}

// Eight processes each add 25 entries, one locked read-modify-write per entry, while this
// process keeps reading: nothing is lost and no reader ever sees a partial file.
TEST_F(ApprovalsFileTest, ConcurrentWritersLoseNothing) {
  constexpr int kProcesses = 8;
  constexpr int kEntries = 25;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int failures = 0;
      for (int i = 0; i < kEntries; ++i) {
        std::string pattern = "/opt/p" + std::to_string(p) + "/bin/tool" + std::to_string(i);
        auto r = UpdateApprovals(path_, [&](ApprovalsFile& f) {
          AddAllowlistEntry(f, p % 2 == 0 ? "main" : "ops", pattern, "allow-always", i);
          return Ok();
        });
        if (!r) ++failures;
      }
      ::_exit(failures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  size_t reads = 0, last_count = 0;
  for (size_t running = children.size(); running > 0;) {
    auto loaded = LoadApprovals(path_);
    ASSERT_TRUE(loaded) << loaded.error().message;
    size_t count = 0;
    for (const auto& [agent, policy] : loaded->file.agents) count += policy.allowlist.size();
    EXPECT_GE(count, last_count);
    last_count = count;
    ++reads;
    running = 0;
    for (pid_t& pid : children) {
      if (pid == 0) continue;
      int status = 0;
      pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        pid = 0;
      } else {
        ++running;
      }
    }
  }
  EXPECT_GT(reads, 0u);
  auto loaded = LoadApprovals(path_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  std::set<std::string> patterns, ids;
  for (const auto& [agent, policy] : loaded->file.agents) {
    for (const auto& e : policy.allowlist) {
      patterns.insert(e.pattern);
      ids.insert(e.id);
    }
  }
  EXPECT_EQ(patterns.size(), size_t{kProcesses * kEntries});
  EXPECT_EQ(ids.size(), size_t{kProcesses * kEntries});
  EXPECT_THAT(NamesStartingWith("exec-approvals.json.tmp-"), IsEmpty());
  EXPECT_THAT(NamesStartingWith("exec-approvals.json.corrupt-"), IsEmpty());
  EXPECT_EQ(Mode(path_), 0600u);
}

// ---------------------------------------------------------------------------------------------
// Helpers.

TEST(NewEntryIdTest, RandomVersion4Uuids) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewEntryId();
    EXPECT_THAT(id, MatchesRegex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                 "[0-9a-f]{12}"));
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(AllowlistEditTest, AddsOncePerRule) {
  ApprovalsFile f;
  EXPECT_TRUE(AddAllowlistEntry(f, "main", "  /usr/bin/rg ", "allow-always", 42));
  ASSERT_EQ(f.agents["main"].allowlist.size(), 1u);
  const AllowlistEntry& e = f.agents["main"].allowlist[0];
  EXPECT_EQ(e.pattern, "/usr/bin/rg");
  EXPECT_EQ(e.source, "allow-always");
  EXPECT_EQ(e.last_used_at, 42);
  EXPECT_EQ(e.arg_pattern, "");
  EXPECT_EQ(e.id.size(), 36u);
  EXPECT_FALSE(AddAllowlistEntry(f, "main", "/USR/BIN/RG", "allow-always", 43));
  EXPECT_FALSE(AddAllowlistEntry(f, "main", "/usr/bin/rg", "", 44));  // no source: left alone
  EXPECT_EQ(f.agents["main"].allowlist[0].source, "allow-always");
  EXPECT_FALSE(AddAllowlistEntry(f, "", "/usr/bin/rg", "operator", 45));  // "" is main
  ASSERT_EQ(f.agents["main"].allowlist.size(), 1u);
  EXPECT_EQ(f.agents["main"].allowlist[0].source, "operator");  // source differs: updated
  EXPECT_EQ(f.agents["main"].allowlist[0].last_used_at, 42);
  EXPECT_FALSE(AddAllowlistEntry(f, "main", "   ", "operator", 46));
  EXPECT_TRUE(AddAllowlistEntry(f, "ops", "/usr/bin/rg", "operator", 47));  // another agent
  // An entry restricted by argPattern is another rule.
  f.agents["x"].allowlist.push_back({"r", "/bin/git", "", "^status$", std::nullopt, "", ""});
  EXPECT_TRUE(AddAllowlistEntry(f, "x", "/bin/git", "", 48));
  EXPECT_EQ(f.agents["x"].allowlist.size(), 2u);
}

TEST(AllowlistEditTest, RemovesByIdOrPattern) {
  ApprovalsFile f;
  f.agents["main"].allowlist = {{"id-1", "/bin/ls", "", "", std::nullopt, "", ""},
                                {"id-2", "/bin/cat", "", "", std::nullopt, "", ""},
                                {"id-3", "/BIN/CAT", "", "-n", std::nullopt, "", ""}};
  EXPECT_FALSE(RemoveAllowlistEntry(f, "ops", "id-1"));
  EXPECT_FALSE(RemoveAllowlistEntry(f, "main", "id-9"));
  EXPECT_FALSE(RemoveAllowlistEntry(f, "main", ""));
  EXPECT_TRUE(RemoveAllowlistEntry(f, "main", " id-1 "));
  EXPECT_TRUE(RemoveAllowlistEntry(f, "", "/bin/Cat"));
  EXPECT_THAT(f.agents["main"].allowlist, IsEmpty());
  EXPECT_EQ(f.agents.count("main"), 1u);
}

TEST(AllowlistEditTest, RecordsUseAcrossAgents) {
  ApprovalsFile f;
  f.agents["*"].allowlist = {{"w", "/bin/ls", "", "", 1, "ls", "/bin/ls"}};
  f.agents["main"].allowlist = {{"m", "/bin/cat", "", "", std::nullopt, "", ""},
                                {"n", "/bin/echo", "", "", 3, "echo", "/bin/echo"}};
  RecordAllowlistUse(f, {{"w", "/usr/bin/ls"}, {"m", "/usr/bin/cat"}, {"gone", "/x"}}, "ls | cat",
                     99);
  EXPECT_EQ(f.agents["*"].allowlist[0],
            (AllowlistEntry{"w", "/bin/ls", "", "", 99, "ls | cat", "/usr/bin/ls"}));
  EXPECT_EQ(f.agents["main"].allowlist[0],
            (AllowlistEntry{"m", "/bin/cat", "", "", 99, "ls | cat", "/usr/bin/cat"}));
  EXPECT_EQ(f.agents["main"].allowlist[1].last_used_at, 3);  // not used
  RecordAllowlistUse(f, {{"n", ""}}, "echo hi", 100);
  EXPECT_EQ(f.agents["main"].allowlist[1].last_resolved_path, "");
  EXPECT_EQ(f.agents["main"].allowlist[1].last_used_command, "echo hi");
}

TEST(ExactCommandPatternTest, HashOfTheTrimmedCommand) {
  // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
  EXPECT_EQ(ExactCommandPattern("abc"), "=command:ba7816bf8f01cfea");
  EXPECT_EQ(ExactCommandPattern("  abc\n\t"), "=command:ba7816bf8f01cfea");
  // sha256("") = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
  EXPECT_EQ(ExactCommandPattern(" "), "=command:e3b0c44298fc1c14");
  EXPECT_NE(ExactCommandPattern("ls -la"), ExactCommandPattern("ls  -la"));
}

}  // namespace
}  // namespace sandrun::config
