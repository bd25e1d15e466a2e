// ApplyPatch on a real temp directory: every operation, all-or-nothing, and the workspace fence.
#include "runner/patch/apply.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "runner/patch/patch.h"

namespace sandrun::patch {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

class ApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-patch-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    base_ = templ;
    root_ = base_ + "/ws";
    fs::create_directories(root_);
  }
  void TearDown() override {
    for (const auto& path : immutable_) SetImmutable(path, false);
    fs::remove_all(base_);
  }

  void Write(const std::string& rel, const std::string& content, const std::string& base = "") {
    fs::path p = fs::path(base.empty() ? root_ : base) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }
  std::string Read(const std::string& rel) const {
    std::ifstream in(fs::path(root_) / rel, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool Exists(const std::string& rel) const {
    return fs::exists(fs::symlink_status(fs::path(root_) / rel));
  }
  // Every entry under the base dir (the workspace and its sibling), hidden files included.
  std::set<std::string> Tree() const {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(base_)) {
      out.insert(fs::relative(e.path(), base_).string() + (e.is_directory() ? "/" : ""));
    }
    return out;
  }

  Result<ApplySummary> Apply(const std::string& body, ApplyOptions options = {}) {
    Result<Patch> p = ParsePatch("*** Begin Patch\n" + body + "*** End Patch\n");
    if (!p) return std::move(p).error();
    if (options.root.empty()) options.root = root_;
    return ApplyPatch(*p, options);
  }

  bool SetImmutable(const std::string& path, bool on) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    int flags = 0;
    bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
    ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    ::close(fd);
    if (ok && on) immutable_.push_back(path);
    return ok;
  }

  std::string base_;
  std::string root_;
  std::vector<std::string> immutable_;
};

TEST_F(ApplyTest, AddUpdateDeleteAndMove) {
  Write("a.txt", "one\ntwo\nthree\n");
  Write("old.txt", "bye\n");
  Write("src/m.py", "x = 1\n");
  auto r = Apply(
      "*** Add File: docs/new.md\n+# New\n+text\n"
      "*** Update File: a.txt\n@@\n one\n-two\n+TWO\n"
      "*** Delete File: old.txt\n"
      "*** Update File: src/m.py\n*** Move to: lib/m.py\n@@\n-x = 1\n+x = 2\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->added, (std::vector<std::string>{"docs/new.md", "lib/m.py"}));
  EXPECT_EQ(r->updated, (std::vector<std::string>{"a.txt"}));
  EXPECT_EQ(r->deleted, (std::vector<std::string>{"old.txt", "src/m.py"}));
  ASSERT_EQ(r->moved.size(), 1u);
  EXPECT_EQ(r->moved[0].from, "src/m.py");
  EXPECT_EQ(r->moved[0].to, "lib/m.py");
  EXPECT_EQ(Read("docs/new.md"), "# New\ntext\n");
  EXPECT_EQ(Read("a.txt"), "one\nTWO\nthree\n");
  EXPECT_FALSE(Exists("old.txt"));
  EXPECT_FALSE(Exists("src/m.py"));
  EXPECT_EQ(Read("lib/m.py"), "x = 2\n");
  EXPECT_EQ(SummaryText(*r),
            "Success. Updated the following files:\nA docs/new.md\nM a.txt\nD old.txt\n"
            "R src/m.py -> lib/m.py");
  EXPECT_EQ(Tree(), (std::set<std::string>{"ws/", "ws/a.txt", "ws/docs/", "ws/docs/new.md",
                                           "ws/src/", "ws/lib/", "ws/lib/m.py"}))
      << "no temp or backup files are left behind";
}

TEST_F(ApplyTest, AddEmptyFile) {
  auto r = Apply("*** Add File: empty.txt\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_TRUE(Exists("empty.txt"));
  EXPECT_EQ(Read("empty.txt"), "");
}

TEST_F(ApplyTest, UpdateKeepsModeCrlfAndMissingFinalNewline) {
  Write("run.sh", "#!/bin/sh\r\necho a\r\necho b");
  ::chmod((root_ + "/run.sh").c_str(), 0751);
  auto r = Apply("*** Update File: run.sh\n@@\n-echo a\n+echo A\n+echo A2\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Read("run.sh"), "#!/bin/sh\r\necho A\r\necho A2\r\necho b");
  struct stat st {};
  ASSERT_EQ(::stat((root_ + "/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0751u);
}

TEST_F(ApplyTest, MoveKeepsMode) {
  Write("tool", "a\n");
  ::chmod((root_ + "/tool").c_str(), 0700);
  auto r = Apply("*** Update File: tool\n*** Move to: bin/tool\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  struct stat st {};
  ASSERT_EQ(::stat((root_ + "/bin/tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(Read("bin/tool"), "a\n");
}

TEST_F(ApplyTest, BadHunkInTheThirdFileLeavesEverythingUntouched) {
  Write("one.txt", "1\n");
  Write("two.txt", "2\n");
  Write("three.txt", "3\n");
  auto before = Tree();
  auto r = Apply(
      "*** Update File: one.txt\n@@\n-1\n+uno\n"
      "*** Update File: two.txt\n@@\n-2\n+dos\n"
      "*** Update File: three.txt\n@@\n-33\n+tres\n"
      "*** Add File: new/four.txt\n+4\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("Failed to find expected lines in three.txt"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(Read("one.txt"), "1\n");
  EXPECT_EQ(Read("two.txt"), "2\n");
  EXPECT_EQ(Tree(), before);
}

TEST_F(ApplyTest, FailureWhileWritingRollsBackEveryFile) {
  Write("one.txt", "1\n");
  Write("two.txt", "2\n");
  Write("three.txt", "3\n");
  Write("gone.txt", "g\n");
  if (!SetImmutable(root_ + "/three.txt", true)) GTEST_SKIP() << "needs FS_IMMUTABLE_FL (root)";
  auto before = Tree();
  auto r = Apply(
      "*** Update File: one.txt\n@@\n-1\n+uno\n"
      "*** Delete File: gone.txt\n"
      "*** Add File: made/deep/new.txt\n+n\n"
      "*** Update File: two.txt\n@@\n-2\n+dos\n"
      "*** Update File: three.txt\n@@\n-3\n+tres\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kIo) << r.error().ToString();
  EXPECT_NE(r.error().message.find("nothing was changed"), std::string::npos);
  EXPECT_NE(r.error().message.find("three.txt"), std::string::npos);
  EXPECT_EQ(Read("one.txt"), "1\n");
  EXPECT_EQ(Read("two.txt"), "2\n");
  EXPECT_EQ(Read("gone.txt"), "g\n");
  EXPECT_EQ(Tree(), before) << "temp files, backups and new directories are gone";
}

TEST_F(ApplyTest, MoveOntoAnExistingFileIsRefused) {
  Write("a.txt", "a\n");
  Write("b.txt", "b\n");
  auto r = Apply("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+A\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kConflict);
  EXPECT_NE(r.error().message.find("Move to: b.txt (patch line 3) already exists"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(Read("a.txt"), "a\n");
  EXPECT_EQ(Read("b.txt"), "b\n");
}

TEST_F(ApplyTest, DeleteFirstThenMoveReplaces) {
  Write("a.txt", "a\n");
  Write("b.txt", "b\n");
  auto r = Apply("*** Delete File: b.txt\n*** Update File: a.txt\n*** Move to: b.txt\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_FALSE(Exists("a.txt"));
  EXPECT_EQ(Read("b.txt"), "a\n");
  EXPECT_EQ(r->updated, (std::vector<std::string>{"b.txt"}));
  EXPECT_EQ(r->deleted, (std::vector<std::string>{"a.txt"}));
}

TEST_F(ApplyTest, DeleteOfAMissingFileIsRefused) {
  auto r = Apply("*** Delete File: nope.txt\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.error().message, "Delete File: nope.txt (patch line 2) does not exist");
}

TEST_F(ApplyTest, UpdateOfAMissingFileIsRefused) {
  auto r = Apply("*** Update File: nope.txt\n@@\n-a\n+b\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
}

TEST_F(ApplyTest, AddOntoAnExistingFileIsRefused) {
  Write("a.txt", "keep\n");
  auto r = Apply("*** Add File: a.txt\n+new\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kConflict);
  EXPECT_EQ(Read("a.txt"), "keep\n");
}

TEST_F(ApplyTest, DeleteThenAddReplacesAndUpdateTwiceComposes) {
  Write("a.txt", "old\n");
  Write("b.txt", "1\n2\n3\n");
  auto r = Apply(
      "*** Delete File: a.txt\n*** Add File: a.txt\n+new\n"
      "*** Update File: b.txt\n@@\n-1\n+one\n"
      "*** Update File: ./b.txt\n@@\n-3\n+three\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Read("a.txt"), "new\n");
  EXPECT_EQ(Read("b.txt"), "one\n2\nthree\n");
  EXPECT_EQ(r->updated, (std::vector<std::string>{"a.txt", "b.txt"}));
  EXPECT_TRUE(r->added.empty());
}

TEST_F(ApplyTest, AddThenDeleteChangesNothing) {
  auto r = Apply("*** Add File: t.txt\n+x\n*** Delete File: t.txt\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_FALSE(Exists("t.txt"));
  EXPECT_TRUE(r->added.empty() && r->deleted.empty());
}

TEST_F(ApplyTest, BinaryFilesAreNotEdited) {
  Write("img.bin", "\x89PNG\0\0\nx\n"s);
  auto r = Apply("*** Update File: img.bin\n@@\n-x\n+y\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("binary"), std::string::npos);
  auto d = Apply("*** Delete File: img.bin\n");
  ASSERT_TRUE(d.has_value()) << d.error().ToString();
  EXPECT_FALSE(Exists("img.bin"));
}

TEST_F(ApplyTest, UnchangedContentIsNotRewritten) {
  Write("same.txt", "a\n");
  struct stat before {};
  ::stat((root_ + "/same.txt").c_str(), &before);
  auto r = Apply("*** Update File: same.txt\n@@\n-a\n+a\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  struct stat after {};
  ::stat((root_ + "/same.txt").c_str(), &after);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(r->updated, (std::vector<std::string>{"same.txt"}));
}

TEST_F(ApplyTest, WorkdirIsTheBaseOfRelativePaths) {
  Write("sub/a.txt", "a\n");
  ApplyOptions o;
  o.workdir = root_ + "/sub";
  auto r = Apply("*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: ../top.txt\n+t\n", o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Read("sub/a.txt"), "b\n");
  EXPECT_EQ(Read("top.txt"), "t\n");
}

// ---- The workspace fence. ----

struct Escape {
  const char* name;
  std::string body;
};

class ApplyEscapes : public ApplyTest, public ::testing::WithParamInterface<Escape> {};

TEST_P(ApplyEscapes, AreRefusedAndChangeNothing) {
  Write("outside.txt", "secret\n", base_);  // next to the workspace
  fs::create_directories(base_ + "/outdir");
  fs::create_symlink(base_ + "/outdir", root_ + "/linkdir");
  fs::create_symlink(base_ + "/outside.txt", root_ + "/linkfile");
  fs::create_symlink("../outside.txt", root_ + "/rellink");
  Write("keep.txt", "k\n");
  auto before = Tree();
  auto r = Apply("*** Update File: keep.txt\n@@\n-k\n+K\n" + GetParam().body);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().sys_errno, EXDEV) << r.error().ToString();
  EXPECT_NE(r.error().message.find("workspace"), std::string::npos) << r.error().message;
  EXPECT_EQ(Tree(), before);
  EXPECT_EQ(Read("keep.txt"), "k\n");
}

INSTANTIATE_TEST_SUITE_P(
    Table, ApplyEscapes,
    ::testing::Values(
        Escape{"DotDot", "*** Add File: ../x\n+x\n"},
        Escape{"DotDotDeep", "*** Add File: a/b/../../../x\n+x\n"},
        Escape{"Absolute", "*** Add File: /etc/x\n+x\n"},
        Escape{"AbsoluteDelete", "*** Delete File: /etc/hostname\n"},
        Escape{"SymlinkedDirectory", "*** Add File: linkdir/x\n+x\n"},
        Escape{"SymlinkedFileUpdate", "*** Update File: linkfile\n@@\n-secret\n+x\n"},
        Escape{"RelativeSymlinkUpdate", "*** Update File: rellink\n@@\n-secret\n+x\n"},
        Escape{"MoveThroughSymlink", "*** Update File: keep.txt\n*** Move to: linkdir/k.txt\n"}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

TEST_F(ApplyTest, SymlinksInsideTheWorkspaceAreFollowed) {
  Write("real/a.txt", "a\n");
  fs::create_symlink("real", root_ + "/alias");
  fs::create_symlink("real/a.txt", root_ + "/a-link");
  auto r = Apply(
      "*** Update File: a-link\n@@\n-a\n+b\n"
      "*** Add File: alias/new.txt\n+n\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Read("real/a.txt"), "b\n");
  EXPECT_TRUE(fs::is_symlink(root_ + "/a-link")) << "the link stays a link";
  EXPECT_EQ(Read("real/new.txt"), "n\n");
}

TEST_F(ApplyTest, DeletingALinkThatPointsOutDeletesOnlyTheLink) {
  Write("outside.txt", "secret\n", base_);
  fs::create_symlink(base_ + "/outside.txt", root_ + "/link");
  auto r = Apply("*** Delete File: link\n");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_FALSE(Exists("link"));
  EXPECT_TRUE(fs::exists(base_ + "/outside.txt"));
}

TEST_F(ApplyTest, AbsolutePathsInsideTheWorkspaceAndItsAliasAreAccepted) {
  Write("a.txt", "a\n");
  ApplyOptions o;
  o.alias_root = "/workspace";
  auto r = Apply(
      "*** Update File: /workspace/a.txt\n@@\n-a\n+b\n*** Add File: " + root_ + "/c.txt\n+c\n", o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Read("a.txt"), "b\n");
  EXPECT_EQ(Read("c.txt"), "c\n");
}

TEST_F(ApplyTest, WorkdirOutsideTheWorkspaceIsRefused) {
  ApplyOptions o;
  o.workdir = base_;
  auto r = Apply("*** Add File: x\n+x\n", o);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().sys_errno, EXDEV);
}

TEST_F(ApplyTest, WithoutWorkspaceOnlyPathsMayLeave) {
  ApplyOptions o;
  o.workspace_only = false;
  auto r = Apply("*** Add File: ../sibling.txt\n+s\n*** Add File: " + base_ + "/abs.txt\n+a\n", o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  std::ifstream in(base_ + "/sibling.txt");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "s");
  EXPECT_TRUE(fs::exists(base_ + "/abs.txt"));
  // Absolute paths inside the workspace still mean the workspace.
  auto inside = Apply("*** Add File: " + root_ + "/in.txt\n+i\n", o);
  ASSERT_TRUE(inside.has_value()) << inside.error().ToString();
  EXPECT_EQ(Read("in.txt"), "i\n");
}

TEST_F(ApplyTest, WorkspaceGivenThroughASymlinkStillContainsItsAbsolutePaths) {
  fs::create_symlink(root_, base_ + "/ws-link");
  ApplyOptions o;
  o.root = base_ + "/ws-link";
  auto r = Apply("*** Add File: " + base_ + "/ws-link/x.txt\n+x\n*** Add File: y.txt\n+y\n", o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Read("x.txt"), "x\n");
  EXPECT_EQ(Read("y.txt"), "y\n");
}

TEST_F(ApplyTest, DanglingSymlinkParentIsRefused) {
  fs::create_symlink("missing-dir", root_ + "/dangling");
  auto r = Apply("*** Add File: dangling/x.txt\n+x\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("dangling symlink"), std::string::npos) << r.error().message;
}

TEST_F(ApplyTest, ParentThatIsAFileIsRefused) {
  Write("file", "f\n");
  auto r = Apply("*** Add File: file/x.txt\n+x\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("not a directory"), std::string::npos) << r.error().message;
}

TEST_F(ApplyTest, TwoHundredFilesApplyQuickly) {
  std::string body;
  for (int i = 0; i < 100; ++i) {
    std::string text;
    for (int l = 0; l < 50; ++l)
      text += "file " + std::to_string(i) + " line " + std::to_string(l) + "\n";
    Write("pkg" + std::to_string(i % 10) + "/u" + std::to_string(i) + ".txt", text);
    body += "*** Update File: pkg" + std::to_string(i % 10) + "/u" + std::to_string(i) +
            ".txt\n@@\n file " + std::to_string(i) + " line 24\n-file " + std::to_string(i) +
            " line 25\n+changed\n";
    body += "*** Add File: new" + std::to_string(i % 10) + "/a" + std::to_string(i) +
            ".txt\n+hello\n+world\n";
  }
  auto start = std::chrono::steady_clock::now();
  auto r = Apply(body);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->added.size(), 100u);
  EXPECT_EQ(r->updated.size(), 100u);
  RecordProperty("milliseconds", std::to_string(ms));
  std::printf("200-file patch applied in %.1f ms\n", ms);
  EXPECT_LT(ms, 2000.0);
}

}  // namespace
}  // namespace sandrun::patch
