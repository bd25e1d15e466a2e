// The audit log: lines round-trip, long commands are capped but hashed whole, rotation keeps
// `keep` files and reads oldest first, concurrent writers (threads and processes) never tear or
// interleave a line, filters, and what the reader refuses or skips.
#include "runner/audit/audit_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "sandbox/base/sha256.h"
#include "tests/support/temp_dir.h"

namespace sandrun::audit {
namespace {

using ::testing::HasSubstr;

class AuditLogTest : public ::testing::Test {
 protected:
  static AuditRecord Record(const std::string& tenant, int i) {
    AuditRecord r;
    r.time_ms = 1790000000000 + i;
    r.tenant = tenant;
    r.token = "tok";
    r.role = "agent";
    r.agent = "main";
    r.session = "s" + std::to_string(i);
    r.tool = "exec";
    r.command = "echo " + std::to_string(i);
    r.host = "sandbox";
    r.decision = "allow";
    r.exit_code = i % 3;
    r.duration_ms = 10 + i;
    return r;
  }
  sandrun::testing::TempDir tmp_{"audit-test"};
  std::string root_ = tmp_.path();
  std::string dir_ = AuditDir(root_);
};

TEST_F(AuditLogTest, LinesRoundTrip) {
  auto log = AuditLog::Open(dir_);
  ASSERT_TRUE(log) << log.error().ToString();
  AuditRecord a = Record("acme", 1);
  a.approval_id = "ap-1";
  a.answered_by = "op";
  a.reason = "allowlist miss";
  AuditRecord b = Record("", 2);
  b.exit_code.reset();
  b.duration_ms.reset();
  b.action = "deny";
  ASSERT_TRUE((*log)->Append(a));
  ASSERT_TRUE((*log)->Append(b));
  auto read = ReadAuditLog(dir_, {});
  ASSERT_TRUE(read) << read.error().ToString();
  ASSERT_EQ(read->records.size(), 2u);
  a.command_sha256 = Sha256Hex(a.command);
  b.command_sha256 = Sha256Hex(b.command);
  EXPECT_EQ(read->records[0], a);
  EXPECT_EQ(read->records[1], b);
  EXPECT_EQ(read->skipped_lines, 0u);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/audit.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(AuditLogTest, LongCommandsAreCappedAndHashedWhole) {
  auto log = AuditLog::Open(dir_);
  ASSERT_TRUE(log);
  AuditRecord r = Record("acme", 1);
  r.command = std::string(kMaxCommandChars - 1, 'x') + "\xC3\xA9" + std::string(100, 'y');
  const std::string whole = r.command;
  ASSERT_TRUE((*log)->Append(r));
  auto read = ReadAuditLog(dir_, {});
  ASSERT_TRUE(read);
  ASSERT_EQ(read->records.size(), 1u);
  EXPECT_EQ(read->records[0].command, std::string(kMaxCommandChars - 1, 'x'))
      << "cut before the two-byte character, not inside it";
  EXPECT_EQ(read->records[0].command_sha256, Sha256Hex(whole));
}

TEST_F(AuditLogTest, RotationKeepsTheNewestFilesAndReadsOldestFirst) {
  auto log = AuditLog::Open(dir_, {.max_bytes = 4096, .keep = 2});
  ASSERT_TRUE(log);
  const int n = 200;  // ~300 bytes each: several rotations
  for (int i = 0; i < n; ++i) ASSERT_TRUE((*log)->Append(Record("acme", i)));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/audit.jsonl.1"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/audit.jsonl.2"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/audit.jsonl.3"));
  for (const char* f : {"/audit.jsonl", "/audit.jsonl.1", "/audit.jsonl.2"}) {
    EXPECT_LE(std::filesystem::file_size(dir_ + f), 4096u) << f;
  }
  auto read = ReadAuditLog(dir_, {});
  ASSERT_TRUE(read);
  ASSERT_FALSE(read->records.empty());
  EXPECT_LT(read->records.size(), static_cast<size_t>(n)) << "the oldest were dropped";
  EXPECT_EQ(read->records.back().session, "s" + std::to_string(n - 1));
  for (size_t i = 1; i < read->records.size(); ++i) {
    EXPECT_EQ(read->records[i].time_ms, read->records[i - 1].time_ms + 1) << "in order, no gap";
  }
}

TEST_F(AuditLogTest, ConcurrentWritersNeverTearALine) {
  constexpr int kProcesses = 4, kThreads = 2, kLines = 150;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto log = AuditLog::Open(dir_, {.max_bytes = 64 << 10, .keep = 50});
      if (!log) _exit(1);
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          for (int i = 0; i < kLines; ++i) {
            AuditRecord r = Record("p" + std::to_string(p), i);
            r.command =
                std::string(static_cast<size_t>(200 + (i % 7) * 50), static_cast<char>('a' + t));
            if (!(*log)->Append(r)) _exit(2);
          }
        });
      }
      for (auto& th : threads) th.join();
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  auto read = ReadAuditLog(dir_, {});
  ASSERT_TRUE(read);
  EXPECT_EQ(read->skipped_lines, 0u);
  EXPECT_EQ(read->records.size(), static_cast<size_t>(kProcesses * kThreads * kLines));
  for (const AuditRecord& r : read->records) {
    ASSERT_FALSE(r.command.empty());
    EXPECT_EQ(r.command, std::string(r.command.size(), r.command[0])) << "a torn line";
    EXPECT_EQ(r.command_sha256, Sha256Hex(r.command));
  }
}

TEST_F(AuditLogTest, FiltersAndSkippedLines) {
  auto log = AuditLog::Open(dir_);
  ASSERT_TRUE(log);
  ASSERT_TRUE((*log)->Append(Record("acme", 1)));
  ASSERT_TRUE((*log)->Append(Record("globex", 2)));
  std::ofstream(dir_ + "/audit.jsonl", std::ios::app) << "not json\n{\"no\":\"time\"}\n";
  ASSERT_TRUE((*log)->Append(Record("acme", 3)));
  auto acme = ReadAuditLog(dir_, {.tenant = "acme"});
  ASSERT_TRUE(acme);
  ASSERT_EQ(acme->records.size(), 2u);
  EXPECT_EQ(acme->skipped_lines, 2u);
  auto local = ReadAuditLog(dir_, {.tenant = ""});
  ASSERT_TRUE(local);
  EXPECT_TRUE(local->records.empty());
  auto since = ReadAuditLog(dir_, {.tenant = std::nullopt, .since_ms = 1790000000002});
  ASSERT_TRUE(since);
  ASSERT_EQ(since->records.size(), 2u);
  EXPECT_EQ(since->records[0].tenant, "globex");
}

TEST_F(AuditLogTest, AMissingLogIsEmptyAndASymlinkedDirIsRefused) {
  auto empty = ReadAuditLog(dir_, {});
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->records.empty());
  std::filesystem::create_directories(root_ + "/elsewhere");
  std::filesystem::create_symlink(root_ + "/elsewhere", dir_);
  auto open = AuditLog::Open(dir_);
  EXPECT_FALSE(open);
  auto read = ReadAuditLog(dir_, {});
  EXPECT_FALSE(read);
  EXPECT_FALSE(AuditLog::Open(root_ + "/x", {.max_bytes = 10, .keep = 1}));
}

}  // namespace
}  // namespace sandrun::audit
