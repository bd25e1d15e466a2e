// The apply_patch envelope parser: every hunk kind, the lenient forms, and errors naming the line.
#include <gtest/gtest.h>

#include <string>

#include "runner/patch/patch.h"

namespace sandrun::patch {
namespace {

using Kind = Hunk::Kind;
using namespace std::string_literals;

Patch MustParse(const std::string& text) {
  Result<Patch> p = ParsePatch(text);
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().ToString());
  return p ? std::move(p).value() : Patch{};
}

TEST(ParsePatch, AddDeleteUpdateMove) {
  Patch p = MustParse(
      "*** Begin Patch\n"
      "*** Add File: new/file.txt\n"
      "+hello\n"
      "+\n"
      "+world\n"
      "*** Delete File: old.txt\n"
      "*** Update File: src/a.py\n"
      "*** Move to: src/b.py\n"
      "@@ def f():\n"
      "     x = 1\n"
      "-    return x\n"
      "+    return x + 1\n"
      "*** End Patch\n");
  ASSERT_EQ(p.hunks.size(), 3u);
  EXPECT_EQ(p.hunks[0].kind, Kind::kAdd);
  EXPECT_EQ(p.hunks[0].path, "new/file.txt");
  EXPECT_EQ(p.hunks[0].contents, "hello\n\nworld\n");
  EXPECT_EQ(p.hunks[0].line, 2u);
  EXPECT_EQ(p.hunks[1].kind, Kind::kDelete);
  EXPECT_EQ(p.hunks[1].path, "old.txt");
  EXPECT_EQ(p.hunks[1].line, 6u);
  const Hunk& u = p.hunks[2];
  EXPECT_EQ(u.kind, Kind::kUpdate);
  EXPECT_EQ(u.path, "src/a.py");
  ASSERT_TRUE(u.move_path.has_value());
  EXPECT_EQ(*u.move_path, "src/b.py");
  ASSERT_EQ(u.chunks.size(), 1u);
  EXPECT_EQ(u.chunks[0].context, "def f():");
  EXPECT_EQ(u.chunks[0].old_lines, (std::vector<std::string>{"    x = 1", "    return x"}));
  EXPECT_EQ(u.chunks[0].new_lines, (std::vector<std::string>{"    x = 1", "    return x + 1"}));
  EXPECT_EQ(u.chunks[0].line, 9u);
  EXPECT_FALSE(u.chunks[0].end_of_file);
}

TEST(ParsePatch, FirstChunkMayOmitTheMarkerAndChunksFollowEachOther) {
  Patch p = MustParse(
      "*** Begin Patch\n"
      "*** Update File: a.txt\n"
      " one\n"
      "-two\n"
      "+TWO\n"
      "@@\n"
      " five\n"
      "+six\n"
      "*** End of File\n"
      "*** End Patch");
  ASSERT_EQ(p.hunks.size(), 1u);
  ASSERT_EQ(p.hunks[0].chunks.size(), 2u);
  EXPECT_FALSE(p.hunks[0].chunks[0].context.has_value());
  EXPECT_EQ(p.hunks[0].chunks[0].line, 3u);
  EXPECT_FALSE(p.hunks[0].chunks[1].context.has_value());
  EXPECT_TRUE(p.hunks[0].chunks[1].end_of_file);
  EXPECT_EQ(p.hunks[0].chunks[1].new_lines, (std::vector<std::string>{"five", "six"}));
}

TEST(ParsePatch, EmptyLineInsideAChunkIsAnEmptyContextLine) {
  Patch p = MustParse("*** Begin Patch\n*** Update File: a\n@@\n a\n\n-b\n*** End Patch\n");
  ASSERT_EQ(p.hunks[0].chunks.size(), 1u);
  EXPECT_EQ(p.hunks[0].chunks[0].old_lines, (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(p.hunks[0].chunks[0].new_lines, (std::vector<std::string>{"a", ""}));
}

TEST(ParsePatch, LenientForms) {
  // Surrounding whitespace, a heredoc wrapper, CRLF line endings, blank lines between hunks.
  Patch p = MustParse(
      "\n  <<'EOF'\r\n*** Begin Patch\r\n*** Delete File: a\r\n\r\n*** Add File: b\r\n+x\r\n"
      "*** End Patch\r\nEOF\n\n");
  ASSERT_EQ(p.hunks.size(), 2u);
  EXPECT_EQ(p.hunks[0].path, "a");
  EXPECT_EQ(p.hunks[1].contents, "x\n");
}

TEST(ParsePatch, UnifiedRangeHeaderKeepsOnlyItsContext) {
  Patch p = MustParse(
      "*** Begin Patch\n*** Update File: a\n@@ -3,4 +3,5 @@ class Foo:\n-x\n+y\n"
      "@@ -10 +11 @@\n-z\n+w\n*** End Patch");
  ASSERT_EQ(p.hunks[0].chunks.size(), 2u);
  EXPECT_EQ(p.hunks[0].chunks[0].context, "class Foo:");
  EXPECT_FALSE(p.hunks[0].chunks[1].context.has_value());
}

TEST(ParsePatch, BareMoveIsARename) {
  Patch p = MustParse("*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch");
  ASSERT_EQ(p.hunks.size(), 1u);
  EXPECT_TRUE(p.hunks[0].chunks.empty());
  EXPECT_EQ(p.hunks[0].move_path, "b");
}

TEST(ParsePatch, AddFileWithoutLinesIsAnEmptyFile) {
  Patch p = MustParse("*** Begin Patch\n*** Add File: empty.txt\n*** End Patch");
  ASSERT_EQ(p.hunks.size(), 1u);
  EXPECT_EQ(p.hunks[0].contents, "");
}

struct BadPatch {
  const char* name;
  std::string text;
  std::string message;  // expected substring
};

class ParsePatchErrors : public ::testing::TestWithParam<BadPatch> {};

TEST_P(ParsePatchErrors, NameTheProblemAndTheLine) {
  Result<Patch> p = ParsePatch(GetParam().text);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(p.error().message.find(GetParam().message), std::string::npos) << p.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParsePatchErrors,
    ::testing::Values(
        BadPatch{"Empty", "  \n\n", "Invalid patch: input is empty."},
        BadPatch{"NoBegin", "*** Update File: a\n*** End Patch",
                 "Invalid patch: The first line of the patch must be '*** Begin Patch' (line 1 "
                 "is '*** Update File: a')"},
        BadPatch{"NoEnd", "*** Begin Patch\n*** Delete File: a\n",
                 "The last line of the patch must be '*** End Patch' (line 2 is '*** Delete "
                 "File: a')"},
        BadPatch{"OnlyBegin", "*** Begin Patch", "The last line of the patch must be"},
        BadPatch{"BadHeader",
                 "*** Begin Patch\n*** Delete File: a\n*** Frobnicate: b\n*** End Patch",
                 "Invalid patch hunk on line 3: '*** Frobnicate: b' is not a valid hunk header. "
                 "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** "
                 "Update File: {path}'"},
        BadPatch{"AddLineWithoutPlus", "*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch",
                 "Invalid patch hunk on line 4: 'y' is not a valid hunk header"},
        BadPatch{"EmptyUpdate", "*** Begin Patch\n*** Update File: a.txt\n*** End Patch",
                 "Invalid patch hunk on line 2: Update file hunk for path 'a.txt' is empty"},
        BadPatch{"UnexpectedLine", "*** Begin Patch\n*** Update File: a\n@@\nfoo\n*** End Patch",
                 "Invalid patch hunk on line 4: Unexpected line found in update hunk: 'foo'. Every "
                 "line should start with ' ' (context line), '+' (added line), or '-' (removed "
                 "line)"},
        BadPatch{"SecondChunkNeedsMarker",
                 "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\nbar\n*** End Patch",
                 "Invalid patch hunk on line 6: Expected update hunk to start with a @@ context "
                 "marker, got: 'bar'"},
        BadPatch{"MarkerWithoutLines", "*** Begin Patch\n*** Update File: a\n@@ ctx\n*** End Patch",
                 "Invalid patch hunk on line 3: Update hunk does not contain any lines"},
        BadPatch{"EndOfFileFirst",
                 "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch",
                 "Invalid patch hunk on line 4: Update hunk does not contain any lines"},
        BadPatch{"EmptyPath", "*** Begin Patch\n*** Delete File:   \n*** End Patch",
                 "Invalid patch hunk on line 2: the file path is empty"},
        BadPatch{"EmptyMovePath",
                 "*** Begin Patch\n*** Update File: a\n*** Move to: \n-x\n*** End Patch",
                 "Invalid patch hunk on line 3: the file path is empty"},
        BadPatch{"NulByte", "*** Begin Patch\n*** Add File: a\n+x\0y\n*** End Patch"s,
                 "Invalid patch: line 3 contains a NUL byte"},
        BadPatch{"NoHunks", "*** Begin Patch\n\n*** End Patch", "no files were modified"},
        BadPatch{"LeadingBlankLinesCount", "\n\n*** Begin Patch\n*** Bogus\n*** End Patch",
                 "Invalid patch hunk on line 4: '*** Bogus'"}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

TEST(ParsePatch, RefusesOversizedInput) {
  std::string big =
      "*** Begin Patch\n*** Add File: a\n+" + std::string(kMaxPatchBytes, 'x') + "\n*** End Patch";
  Result<Patch> p = ParsePatch(big);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message.find("the limit is"), std::string::npos);
}

}  // namespace
}  // namespace sandrun::patch
