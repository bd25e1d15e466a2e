// The output log's line paging (OpenClaw's sliceLogLines semantics over a file with a sparse
// index) and the poll drain buffers.
#include "runner/sessions/output_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace sandrun::sessions {
namespace {

std::string Lines(int from, int to) {  // "line<from>\n...line<to-1>\n"
  std::string s;
  for (int i = from; i < to; ++i) s += "line" + std::to_string(i) + "\n";
  return s;
}

std::string Joined(int from, int to) {
  std::string s = Lines(from, to);
  if (!s.empty()) s.pop_back();
  return s;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sessions_log_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr size_t kBig = 1 << 20;

TEST(OutputLogTest, EmptyLog) {
  OutputLog log;
  LogSlice s = log.Slice(std::nullopt, std::nullopt, kBig);
  EXPECT_EQ(s.text, "");
  EXPECT_EQ(s.total_lines, 0);
  EXPECT_EQ(s.total_chars, 0u);
  EXPECT_EQ(s.line_count, 0);
}

TEST(OutputLogTest, OffsetAndLimitSemantics) {
  OutputLog log;
  log.Append(Lines(0, 10));
  EXPECT_EQ(log.total_lines(), 10);  // the trailing empty line is not a line
  EXPECT_EQ(log.Slice(std::nullopt, std::nullopt, kBig).text, Joined(0, 10));
  EXPECT_EQ(log.Slice(std::nullopt, 3, kBig).text, Joined(7, 10));  // limit only: the last 3
  EXPECT_EQ(log.Slice(4, std::nullopt, kBig).text, Joined(4, 10));  // offset only: to the end
  EXPECT_EQ(log.Slice(2, 3, kBig).text, Joined(2, 5));              // both
  EXPECT_EQ(log.Slice(8, 10, kBig).text, Joined(8, 10));            // past the end: clipped
  EXPECT_EQ(log.Slice(20, 5, kBig).text, "");
  EXPECT_EQ(log.Slice(std::nullopt, 50, kBig).text, Joined(0, 10));
  EXPECT_EQ(log.Slice(std::nullopt, 0, kBig).text, "");
  EXPECT_EQ(log.Slice(-3, 2, kBig).text, Joined(0, 2));  // negatives count as 0
  LogSlice s = log.Slice(2, 3, kBig);
  EXPECT_EQ(s.first_line, 2);
  EXPECT_EQ(s.line_count, 3);
  EXPECT_EQ(s.total_lines, 10);
  EXPECT_EQ(s.total_chars, Lines(0, 10).size());
}

TEST(OutputLogTest, LastLineWithoutNewlineAndCrLf) {
  OutputLog log;
  log.Append("a\r\nb\r\n\r\nc");
  EXPECT_EQ(log.total_lines(), 4);
  EXPECT_EQ(log.Slice(std::nullopt, std::nullopt, kBig).text, "a\nb\n\nc");
  log.Append("d\n");
  EXPECT_EQ(log.total_lines(), 4);
  EXPECT_EQ(log.Slice(3, 1, kBig).text, "cd");
}

TEST(OutputLogTest, SanitisesLines) {
  OutputLog log;
  log.Append(std::string("ok\x1b[31mred\x07\nbad \xff byte\n"));
  EXPECT_EQ(log.Slice(std::nullopt, std::nullopt, kBig).text, "ok[31mred\nbad \xEF\xBF\xBD byte");
}

TEST(OutputLogTest, PagesThroughManyLinesInMemoryAndOnDisk) {
  TempDir dir;
  OutputLog memory;
  OutputLog disk;
  ASSERT_TRUE(disk.Persist(dir.path() + "/output.log"));
  // Arrives in odd-sized chunks so lines straddle appends.
  std::string all = Lines(0, 5000);
  for (size_t at = 0; at < all.size(); at += 777) {
    memory.Append(std::string_view(all).substr(at, 777));
    disk.Append(std::string_view(all).substr(at, 777));
  }
  for (OutputLog* log : {&memory, &disk}) {
    EXPECT_EQ(log->total_lines(), 5000);
    EXPECT_EQ(log->Slice(1023, 3, kBig).text, Joined(1023, 1026));
    EXPECT_EQ(log->Slice(2048, 1, kBig).text, Joined(2048, 2049));
    EXPECT_EQ(log->Slice(4999, 10, kBig).text, Joined(4999, 5000));
    EXPECT_EQ(log->Slice(std::nullopt, 200, kBig).text, Joined(4800, 5000));
    EXPECT_EQ(log->ReadTail(8), "ine4999\n");
  }
  disk.Close();  // reads reopen the file
  EXPECT_EQ(disk.Slice(3000, 2, kBig).text, Joined(3000, 3002));
  OutputLog reopened;
  ASSERT_TRUE(reopened.OpenExisting(dir.path() + "/output.log"));
  EXPECT_EQ(reopened.total_lines(), 5000);
  EXPECT_EQ(reopened.size(), all.size());
  EXPECT_EQ(reopened.Slice(4096, 2, kBig).text, Joined(4096, 4098));
}

std::string ReadAll(const std::string& path) {
  std::string content;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) content.append(buf, n);
  std::fclose(f);
  return content;
}

TEST(OutputLogTest, PersistWritesWhatWasBufferedThenAppends) {
  TempDir dir;
  OutputLog log;
  log.Append("0123456789\n");
  log.Append("abcdefghij\n");
  EXPECT_FALSE(log.persisted());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/output.log"));
  ASSERT_TRUE(log.Persist(dir.path() + "/output.log"));
  EXPECT_TRUE(log.persisted());
  log.Append("tail\n");
  EXPECT_EQ(log.Slice(std::nullopt, std::nullopt, kBig).text, "0123456789\nabcdefghij\ntail");
  EXPECT_EQ(ReadAll(dir.path() + "/output.log"), "0123456789\nabcdefghij\ntail\n");
  EXPECT_EQ(log.total_lines(), 3);
  EXPECT_FALSE(log.capped());
}

TEST(OutputLogTest, BufferingKeepsTheHeadAndTheTailWithAMarker) {
  TempDir dir;
  OutputLog log(uint64_t{1} << 30, /*buffer_bytes=*/100);
  log.Append(Lines(0, 100));  // 590 bytes: 50 kept at the start, the latest 50-100 at the end
  EXPECT_TRUE(log.capped());
  ASSERT_TRUE(log.Persist(dir.path() + "/output.log"));
  std::string kept = ReadAll(dir.path() + "/output.log");
  EXPECT_EQ(kept.substr(0, 50), Lines(0, 100).substr(0, 50));
  EXPECT_NE(kept.find("bytes of output not kept: a run keeps 100 bytes until it is backgrounded"),
            std::string::npos)
      << kept;
  EXPECT_EQ(kept.substr(kept.size() - 14), "line98\nline99\n");
  // The tail starts at a line.
  std::string after = kept.substr(kept.find("backgrounded ...]\n") + 18);
  EXPECT_EQ(after.substr(0, 4), "line");
  EXPECT_EQ(log.dropped() + log.size(), Lines(0, 100).size() + (kept.size() - 50 - after.size()));
  log.Append("after\n");  // from now on everything is kept
  EXPECT_EQ(log.Slice(std::nullopt, 1, kBig).text, "after");
}

TEST(OutputLogTest, PersistFailureKeepsTheLogInMemory) {
  OutputLog log;
  log.Append("kept\n");
  EXPECT_FALSE(log.Persist("/nonexistent-dir/output.log"));
  EXPECT_FALSE(log.persisted());
  log.Append("more\n");
  EXPECT_EQ(log.Slice(std::nullopt, std::nullopt, kBig).text, "kept\nmore");
}

TEST(OutputLogTest, CapsTheTextAtWholeLines) {
  OutputLog log;
  log.Append(Lines(0, 100));
  LogSlice s = log.Slice(0, 100, 30);
  EXPECT_TRUE(s.cut);
  EXPECT_EQ(s.text, Joined(0, 5));  // "line0\n...line4" is 29 bytes
  EXPECT_EQ(s.line_count, 5);
  LogSlice one = log.Slice(10, 1, 2);  // at least one line even if longer than the cap
  EXPECT_EQ(one.text, "line10");
}

TEST(OutputLogTest, MaxBytesDropsTheRest) {
  TempDir dir;
  OutputLog log(10);
  ASSERT_TRUE(log.Persist(dir.path() + "/output.log"));
  log.Append("12345\n");
  log.Append("67890\nabc\n");
  EXPECT_EQ(log.size(), 10u);
  EXPECT_EQ(log.dropped(), 6u);
  EXPECT_TRUE(log.capped());
  EXPECT_EQ(log.Slice(std::nullopt, std::nullopt, kBig).text, "12345\n6789");
  EXPECT_EQ(log.Slice(std::nullopt, std::nullopt, kBig).dropped, 6u);
}

TEST(PendingBufferTest, TakeDrainsAndSanitises) {
  PendingBuffer b(100);
  b.Append("hello ");
  b.Append("\x1bworld");
  EXPECT_EQ(b.Take(false), "hello world");
  EXPECT_EQ(b.Take(false), "");
}

TEST(PendingBufferTest, DropsTheOldestBeyondTheCap) {
  PendingBuffer b(10);
  b.Append("0123456789");
  b.Append("abcde");
  EXPECT_EQ(b.size(), 10u);
  EXPECT_EQ(b.Take(true), "56789abcde");
  PendingBuffer big(20000);
  std::string chunk(8192 * 3, 'x');
  chunk.back() = 'y';
  big.Append(chunk);
  std::string got = big.Take(true);
  EXPECT_EQ(got.size(), 20000u);
  EXPECT_EQ(got.back(), 'y');
}

TEST(PendingBufferTest, NeverSplitsUtf8) {
  PendingBuffer b(100);
  b.Append("caf\xC3");  // é split across reads
  EXPECT_EQ(b.Take(false), "caf");
  b.Append("\xA9!");
  EXPECT_EQ(b.Take(false), "\xC3\xA9!");
  b.Append("\xE2\x82");  // an unfinished euro sign at the very end
  EXPECT_EQ(b.Take(true), "\xEF\xBF\xBD");
  PendingBuffer small(3);
  small.Append("a\xE2\x82\xAC");  // dropping "a" keeps the euro sign whole
  EXPECT_EQ(small.Take(true), "\xE2\x82\xAC");
  PendingBuffer tiny(2);
  tiny.Append("a\xE2\x82\xAC");  // the cut lands inside the sequence: all of it goes
  EXPECT_EQ(tiny.Take(true), "");
}

}  // namespace
}  // namespace sandrun::sessions
