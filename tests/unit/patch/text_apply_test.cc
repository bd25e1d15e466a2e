// Applying Update File chunks to file contents: matching, ambiguity, line endings, final newline.
#include "runner/patch/text_apply.h"

#include <gtest/gtest.h>

#include <string>

#include "runner/patch/patch.h"

namespace sandrun::patch {
namespace {

using namespace std::string_literals;

// The chunks of "*** Update File: f" with `body` (the lines after the header).
std::vector<Chunk> Chunks(const std::string& body) {
  Result<Patch> p = ParsePatch("*** Begin Patch\n*** Update File: f\n" + body + "*** End Patch\n");
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().ToString());
  if (!p || p->hunks.empty()) return {};
  return p->hunks[0].chunks;
}

struct Case {
  const char* name;
  std::string original;
  std::string body;      // chunk lines
  std::string expected;  // the new content, or the error substring when `error`
  bool error = false;
};

class ApplyChunksTable : public ::testing::TestWithParam<Case> {};

TEST_P(ApplyChunksTable, Applies) {
  const Case& c = GetParam();
  Result<std::string> out = ApplyChunks(c.original, Chunks(c.body), "f.txt");
  if (c.error) {
    ASSERT_FALSE(out.has_value()) << "got: " << *out;
    EXPECT_NE(out.error().message.find(c.expected), std::string::npos) << out.error().message;
  } else {
    ASSERT_TRUE(out.has_value()) << out.error().message;
    EXPECT_EQ(*out, c.expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ApplyChunksTable,
    ::testing::Values(
        Case{"ReplaceMiddle", "a\nb\nc\n", "@@\n a\n-b\n+B\n c\n", "a\nB\nc\n"},
        Case{"FirstChunkWithoutMarker", "a\nb\nc\n", " b\n-c\n+C\n", "a\nb\nC\n"},
        Case{"DeleteLines", "a\nb\nc\nd\n", "@@\n a\n-b\n-c\n d\n", "a\nd\n"},
        Case{"TwoChunksInOrder", "x\n1\nx\n2\nx\n", "@@\n 1\n-x\n+y\n@@\n 2\n-x\n+z\n",
             "x\n1\ny\n2\nz\n"},
        Case{"ContextMismatch", "a\nb\nc\n", "@@\n a\n-q\n+B\n",
             "Failed to find expected lines in f.txt (hunk at patch line 3):\na\nq", true},
        Case{"AmbiguousHunk", "x = 1\ny\nx = 1\n", "@@\n-x = 1\n+x = 2\n",
             "Ambiguous hunk at patch line 3: its lines match f.txt at lines 1 and 3", true},
        Case{"ContextLineDisambiguates", "def f():\n  return 1\ndef g():\n  return 1\n",
             "@@ def g():\n-  return 1\n+  return 2\n",
             "def f():\n  return 1\ndef g():\n  return 2\n"},
        Case{"AmbiguousContextLine", "}\nA\n}\nA\n", "@@ }\n-A\n+B\n",
             "Ambiguous hunk at patch line 3: its @@ context '}' matches f.txt at lines 1 and 3",
             true},
        Case{"MissingContextLine", "a\n", "@@ def nope():\n-a\n+b\n",
             "Failed to find context 'def nope():' in f.txt (hunk at patch line 3)", true},
        Case{"LaterChunkSearchesAfterTheEarlierOne", "a\nk\nv\nk\nv\n",
             "@@\n a\n k\n-v\n+1\n@@\n k\n-v\n+2\n", "a\nk\n1\nk\n2\n"},
        Case{"SameLinesTwiceAreAmbiguous", "k\nv\nk\nv\n", "@@\n k\n-v\n+1\n",
             "its lines match f.txt at lines 1 and 3", true},
        Case{"EndOfFilePinsTheMatch", "x\nx\n", "@@\n-x\n+y\n*** End of File\n", "x\ny\n"},
        Case{"CrlfKept", "a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2\n", "a\r\nB\r\nB2\r\nc\r\n"},
        Case{"MixedEndingsKeepUntouchedLines", "a\r\nb\nc\r\nd\r\n", "@@\n c\n-d\n+D\n",
             "a\r\nb\nc\r\nD\r\n"},
        Case{"NoTrailingNewlineKept", "a\nb", "@@\n a\n-b\n+B\n", "a\nB"},
        Case{"AppendToFileWithoutTrailingNewline", "a\nb", "@@\n b\n+c\n", "a\nb\nc"},
        Case{"PureAdditionGoesToTheEnd", "a\nb\n", "@@\n+c\n", "a\nb\nc\n"},
        Case{"PureAdditionAfterContextLine", "def f():\n  pass\nz\n", "@@ def f():\n+  # hi\n",
             "def f():\n  # hi\n  pass\nz\n"},
        Case{"EmptyFileGetsLines", "", "@@\n+first\n+second\n", "first\nsecond\n"},
        Case{"EmptyFileContextMismatch", "", "@@\n-x\n+y\n", "Failed to find expected lines", true},
        Case{"DeleteEverything", "a\nb\n", "@@\n-a\n-b\n", ""},
        Case{"TrailingEmptyContextStandsForFinalNewline", "a\nb\n", "@@\n-b\n+c\n \n", "a\nc\n"},
        Case{"TrailingWhitespaceIgnoredWhenNeeded", "a  \nb\n", "@@\n a\n-b\n+c\n", "a  \nc\n"},
        Case{"IndentationIgnoredWhenNeeded", "    a\nb\n", "@@\n a\n-b\n+c\n", "    a\nc\n"},
        Case{"TypographicPunctuationFolded", "say(\xE2\x80\x9Chi\xE2\x80\x9D) \xE2\x80\x94 ok\n",
             "@@\n-say(\"hi\") - ok\n+say(\"bye\")\n", "say(\"bye\")\n"},
        Case{"ExactMatchWinsOverLenient", "b \nb\n", "@@\n-b\n+c\n", "b \nc\n"},
        Case{"BinaryRefused", "a\0b\n"s, "@@\n-a\n+b\n", "binary file", true}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

TEST(LooksBinary, NulByteMeansBinary) {
  EXPECT_TRUE(LooksBinary("\x89PNG\r\n\x1a\n\0\0"s));
  EXPECT_FALSE(LooksBinary("caf\xC3\xA9\n"));
  EXPECT_FALSE(LooksBinary(""));
}

TEST(ApplyChunks, LargeFileManyChunksIsLinearEnough) {
  std::string original;
  for (int i = 0; i < 20000; ++i) original += "line " + std::to_string(i) + "\n";
  std::string body;
  for (int i = 0; i < 20000; i += 1000) {
    body += "@@\n line " + std::to_string(i) + "\n-line " + std::to_string(i + 1) + "\n+changed " +
            std::to_string(i + 1) + "\n";
  }
  Result<std::string> out = ApplyChunks(original, Chunks(body), "big.txt");
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_NE(out->find("changed 19001\n"), std::string::npos);
  EXPECT_EQ(out->find("line 19001\n"), std::string::npos);
}

}  // namespace
}  // namespace sandrun::patch
