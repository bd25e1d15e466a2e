// apply_patch and tool policy through the binary: `sandrun call`, `sandrun apply-patch`, and what
// the sandbox sees afterwards.
#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

namespace fs = std::filesystem;

std::string PatchCall(const std::string& patch, const std::string& extra = "") {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.String(patch.c_str(), static_cast<rapidjson::SizeType>(patch.size()));
  return std::string("{\"tool\":\"apply_patch\",\"input\":") + buffer.GetString() + extra + "}";
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> DetailList(const rapidjson::Document& doc, const char* key) {
  const auto* d = JsonMember(doc, "details");
  return d ? JsonStringArray(*d, key) : std::vector<std::string>{};
}

std::string ErrorCode(const rapidjson::Document& doc) {
  const auto* e = JsonMember(doc, "error");
  return e ? JsonString(*e, "code") : "";
}

std::string ErrorMessage(const rapidjson::Document& doc) {
  const auto* e = JsonMember(doc, "error");
  return e ? JsonString(*e, "message") : "";
}

std::string ContentText(const rapidjson::Document& doc) {
  const auto* content = JsonMember(doc, "content");
  if (content == nullptr || !content->IsArray() || content->Empty()) return "";
  return JsonString((*content)[0], "text");
}

class ApplyPatchE2e : public SandrunHome {
 protected:
  void WriteWs(const std::string& rel, const std::string& content) {
    fs::path p = fs::path(workspace_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }
  ProcessResult PatchFile(const std::string& patch, std::vector<std::string> flags = {}) {
    std::string file = home_ + "/input.patch";
    std::ofstream(file, std::ios::binary) << patch;
    std::vector<std::string> args = {"apply-patch", file};
    args.insert(args.end(), flags.begin(), flags.end());
    return Sandrun(args);
  }
};

TEST_F(ApplyPatchE2e, DefaultSandboxEditsTheScratchDirTheContainerSees) {
  SANDRUN_REQUIRE_DOCKER(client);
  MinimalSandboxConfig();
  auto empty = Exec({}, "ls -A /workspace");
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out, "") << "the scratch workspace is empty at first";

  auto r = Call(PatchCall(
      "*** Begin Patch\n*** Add File: notes/hello.txt\n+hello from apply_patch\n+line two\n"
      "*** End Patch\n"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "status"), "completed");
  EXPECT_EQ(Details(doc, "host"), "sandbox");
  EXPECT_EQ(Details(doc, "cwd"), "/workspace");
  EXPECT_EQ(DetailList(doc, "added"), (std::vector<std::string>{"notes/hello.txt"}));
  EXPECT_EQ(ContentText(doc), "Success. Updated the following files:\nA notes/hello.txt");
  EXPECT_FALSE(fs::exists(workspace_ + "/notes")) << "the real workspace is not touched";

  auto cat = Exec({}, "cat /workspace/notes/hello.txt");
  EXPECT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_EQ(cat.out, "hello from apply_patch\nline two\n");

  // A file the container wrote, updated through the container's own path.
  ASSERT_EQ(Exec({}, "printf 'a\\nb\\n' > /workspace/made-inside.txt").exit_code, 0);
  auto u = Call(
      PatchCall("*** Begin Patch\n*** Update File: /workspace/made-inside.txt\n@@\n a\n-b\n+B\n"
                "*** End Patch\n"));
  ASSERT_EQ(u.exit_code, 0) << u.out << u.err;
  EXPECT_EQ(Exec({}, "cat /workspace/made-inside.txt").out, "a\nB\n");
}

TEST_F(ApplyPatchE2e, SandboxedPatchCannotLeaveTheMount) {
  MinimalSandboxConfig();
  for (const std::string& path :
       std::vector<std::string>{"../escape.txt", "/etc/sandrun-x", home_ + "/x.txt"}) {
    auto r = Call(PatchCall("*** Begin Patch\n*** Add File: " + path + "\n+x\n*** End Patch\n"));
    EXPECT_EQ(r.exit_code, 2) << path << ": " << r.out;
    EXPECT_EQ(ErrorCode(Parsed(r.out)), "path-not-allowed") << r.out;
  }
  EXPECT_FALSE(fs::exists(home_ + "/sandboxes/escape.txt"));
  EXPECT_FALSE(fs::exists(home_ + "/x.txt"));
}

TEST_F(ApplyPatchE2e, ReadOnlyWorkspaceIsRefused) {
  MinimalSandboxConfig("\"workspaceAccess\": \"ro\"");
  auto r = Call(PatchCall("*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  auto doc = Parsed(r.out);
  EXPECT_EQ(ErrorCode(doc), "read-only-workspace");
  EXPECT_FALSE(fs::exists(workspace_ + "/a.txt"));
}

TEST_F(ApplyPatchE2e, RwWorkspaceEditsTheRealWorkspace) {
  MinimalSandboxConfig("\"workspaceAccess\": \"rw\"");
  WriteWs("src/a.txt", "one\n");
  auto r =
      Call(PatchCall("*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+uno\n*** End Patch\n",
                     ",\"workdir\":\"/workspace/src\""));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(ReadText(workspace_ + "/src/a.txt"), "uno\n");
  EXPECT_EQ(Details(Parsed(r.out), "cwd"), "/workspace/src");
}

TEST_F(ApplyPatchE2e, GatewayEditsTheWorkspaceRelativeToTheWorkdir) {
  Config(R"({"sandbox": {"mode": "off"}})");
  WriteWs("pkg/mod.py", "def f():\r\n    return 1\r\n");
  WriteWs("pkg/old.txt", "bye\n");
  auto r =
      Call(PatchCall("*** Begin Patch\n"
                     "*** Update File: mod.py\n@@ def f():\n-    return 1\n+    return 2\n"
                     "*** Delete File: old.txt\n"
                     "*** Add File: new.txt\n+fresh\n"
                     "*** End Patch\n",
                     ",\"workdir\":\"pkg\""));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "host"), "gateway");
  EXPECT_EQ(DetailList(doc, "added"), (std::vector<std::string>{"new.txt"}));
  EXPECT_EQ(DetailList(doc, "updated"), (std::vector<std::string>{"mod.py"}));
  EXPECT_EQ(DetailList(doc, "deleted"), (std::vector<std::string>{"old.txt"}));
  EXPECT_EQ(ReadText(workspace_ + "/pkg/mod.py"), "def f():\r\n    return 2\r\n") << "CRLF kept";
  EXPECT_EQ(ReadText(workspace_ + "/pkg/new.txt"), "fresh\n");
  EXPECT_FALSE(fs::exists(workspace_ + "/pkg/old.txt"));
}

TEST_F(ApplyPatchE2e, CliPrintsTheSummaryAndRefusesWithExitTwo) {
  Config(R"({"sandbox": {"mode": "off"}})");
  WriteWs("a.txt", "1\n");
  WriteWs("b.txt", "2\n");
  WriteWs("c.txt", "3\n");
  auto ok = PatchFile("*** Begin Patch\n*** Update File: a.txt\n@@\n-1\n+one\n*** End Patch\n");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "Success. Updated the following files:\nM a.txt\n");

  // All or nothing: the bad hunk in the third file leaves the first two untouched.
  auto bad = PatchFile(
      "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: b.txt\n@@\n-2\n"
      "+two\n*** Update File: c.txt\n@@\n-nope\n+x\n*** End Patch\n");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_NE(bad.err.find("sandrun: Failed to find expected lines in c.txt (hunk at patch line 11)"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(ReadText(workspace_ + "/a.txt"), "one\n");
  EXPECT_EQ(ReadText(workspace_ + "/b.txt"), "2\n");
  EXPECT_EQ(ReadText(workspace_ + "/c.txt"), "3\n");

  auto json = PatchFile("*** Begin Patch\n*** Frob\n*** End Patch\n", {"--json"});
  EXPECT_EQ(json.exit_code, 2);
  auto doc = Parsed(json.out);
  EXPECT_EQ(ErrorCode(doc), "invalid-patch");
  EXPECT_NE(ErrorMessage(doc).find("Invalid patch hunk on line 2: '*** Frob' is not a valid hunk"),
            std::string::npos)
      << json.out;

  auto from_stdin = RunProcess({SANDRUN_BINARY, "--workspace", workspace_, "apply-patch", "-"},
                               Env(), "*** Begin Patch\n*** Add File: d.txt\n+d\n*** End Patch\n");
  EXPECT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(ReadText(workspace_ + "/d.txt"), "d\n");
}

TEST_F(ApplyPatchE2e, GatewayEscapesAreRefused) {
  Config(R"({"sandbox": {"mode": "off"}})");
  fs::create_directories(home_ + "/outside");
  fs::create_symlink(home_ + "/outside", workspace_ + "/link");
  for (const char* path : {"../x.txt", "/etc/sandrun-x", "link/x.txt"}) {
    auto r = Call(
        PatchCall(std::string("*** Begin Patch\n*** Add File: ") + path + "\n+x\n*** End Patch\n"));
    EXPECT_EQ(r.exit_code, 2) << path;
    EXPECT_EQ(ErrorCode(Parsed(r.out)), "path-not-allowed") << r.out;
  }
  EXPECT_TRUE(fs::is_empty(home_ + "/outside"));
  // workspaceOnly false lets a gateway patch write outside on purpose.
  Config(
      R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"applyPatch": {"workspaceOnly": false}}}})");
  auto r = Call(PatchCall("*** Begin Patch\n*** Add File: link/x.txt\n+x\n*** End Patch\n"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(home_ + "/outside/x.txt"));
}

TEST_F(ApplyPatchE2e, EnabledAndAllowModels) {
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"applyPatch": {"enabled": false}}}})");
  const std::string patch = "*** Begin Patch\n*** Add File: m.txt\n+m\n*** End Patch\n";
  auto off = Call(PatchCall(patch));
  EXPECT_EQ(off.exit_code, 2);
  EXPECT_EQ(Parsed(off.out)["error"]["message"].GetString(),
            std::string("Tool apply_patch is disabled (tools.exec.applyPatch.enabled is false)."));
  Config(R"({"sandbox": {"mode": "off"},
             "tools": {"exec": {"applyPatch": {"allowModels": ["openai/gpt-5.4"]}}}})");
  auto wrong = Call(PatchCall(patch, ",\"model\":\"gpt-4o\""));
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_EQ(ErrorCode(Parsed(wrong.out)), "tool-denied");
  auto right = Call(PatchCall(patch, ",\"model\":\"gpt-5.4\""));
  EXPECT_EQ(right.exit_code, 0) << right.out;
  EXPECT_TRUE(fs::exists(workspace_ + "/m.txt"));
}

TEST_F(ApplyPatchE2e, MalformedCallsAreRefused) {
  Config(R"({"sandbox": {"mode": "off"}})");
  auto none = Call(R"({"tool":"apply_patch"})");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(ErrorCode(Parsed(none.out)), "invalid-request");
  auto number = Call(R"({"tool":"apply_patch","input":5})");
  EXPECT_EQ(number.exit_code, 2);
  EXPECT_NE(ErrorMessage(Parsed(number.out)).find("must be a string, got number"),
            std::string::npos);
}

// ---- Tool policy. ----

TEST_F(ApplyPatchE2e, DeniedExecIsRefusedWithTheExactError) {
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"deny": ["exec"]}})");
  std::string marker = marks_ + "/must-not-exist";
  auto r = Call(R"({"tool":"exec","command":"touch )" + marker + R"("})");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "{\"error\":{\"code\":\"tool-denied\",\"message\":\"Tool exec is denied by tool policy "
            "(tools.deny).\"}}\n");
  auto e = Exec({}, "touch " + marker);
  EXPECT_EQ(e.exit_code, 125);
  EXPECT_NE(e.err.find("Tool exec is denied by tool policy (tools.deny)."), std::string::npos);
  EXPECT_FALSE(fs::exists(marker));
  // deny exec leaves apply_patch alone.
  auto p = Call(PatchCall("*** Begin Patch\n*** Add File: ok.txt\n+ok\n*** End Patch\n"));
  EXPECT_EQ(p.exit_code, 0) << p.out;
}

TEST_F(ApplyPatchE2e, WriteImpliesApplyPatchButDenyWriteDoesNotDenyIt) {
  const std::string patch = "*** Begin Patch\n*** Add File: w.txt\n+w\n*** End Patch\n";
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"allow": ["write"]}})");
  EXPECT_EQ(Call(PatchCall(patch)).exit_code, 0);
  auto exec = Call(R"({"tool":"exec","command":"true"})");
  EXPECT_EQ(exec.exit_code, 2);
  EXPECT_EQ(ErrorMessage(Parsed(exec.out)), "Tool exec is denied by tool policy (tools.allow).");
  fs::remove(workspace_ + "/w.txt");
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"deny": ["write"]}})");
  EXPECT_EQ(Call(PatchCall(patch)).exit_code, 0);
  fs::remove(workspace_ + "/w.txt");
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"deny": ["group:fs"]}})");
  auto denied = Call(PatchCall(patch));
  EXPECT_EQ(denied.exit_code, 2);
  EXPECT_EQ(ErrorMessage(Parsed(denied.out)),
            "Tool apply_patch is denied by tool policy (tools.deny).");
  EXPECT_FALSE(fs::exists(workspace_ + "/w.txt"));
}

TEST_F(ApplyPatchE2e, PerAgentToolPolicy) {
  Config(R"({"sandbox": {"mode": "off"},
             "agents": {"ops": {"tools": {"deny": ["group:runtime"]}}}})");
  auto main_agent = Sandrun({"call", R"({"tool":"exec","command":"echo main"})"});
  EXPECT_EQ(main_agent.exit_code, 0) << main_agent.out;
  auto ops = Sandrun({"--agent", "ops", "call", R"({"tool":"exec","command":"echo ops"})"});
  EXPECT_EQ(ops.exit_code, 2);
  EXPECT_EQ(ErrorMessage(Parsed(ops.out)), "Tool exec is denied by tool policy (tools.deny).");
}

TEST_F(ApplyPatchE2e, DeniedProcessMakesExecSynchronousWithTheWarning) {
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"deny": ["process"]}})");
  auto r = Call(R"({"tool":"exec","command":"echo done","background":true,"yieldMs":10})");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "status"), "completed");
  EXPECT_EQ(ContentText(doc),
            "Warning: background execution is disabled; running synchronously.\n\ndone");
}

TEST_F(ApplyPatchE2e, TwoHundredFilePatchAppliesWellUnderASecond) {
  Config(R"({"sandbox": {"mode": "off"}})");
  std::string patch = "*** Begin Patch\n";
  for (int i = 0; i < 100; ++i) {
    std::string text;
    for (int l = 0; l < 40; ++l)
      text += "module " + std::to_string(i) + " line " + std::to_string(l) + "\n";
    const std::string name = "src/m" + std::to_string(i % 10) + "/f" + std::to_string(i) + ".txt";
    WriteWs(name, text);
    patch += "*** Update File: " + name + "\n@@\n module " + std::to_string(i) +
             " line 19\n-module " + std::to_string(i) + " line 20\n+changed " + std::to_string(i) +
             "\n module " + std::to_string(i) + " line 21\n";
    patch += "*** Add File: gen/g" + std::to_string(i % 10) + "/n" + std::to_string(i) +
             ".txt\n+generated " + std::to_string(i) + "\n";
  }
  patch += "*** End Patch\n";
  auto r = PatchFile(patch, {"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = Parsed(r.out);
  EXPECT_EQ(DetailList(doc, "added").size(), 100u);
  EXPECT_EQ(DetailList(doc, "updated").size(), 100u);
  std::printf("sandrun apply-patch, 200 files: %.1f ms wall (process start to exit)\n",
              r.seconds * 1000);
  RecordProperty("wall_ms", std::to_string(r.seconds * 1000));
  EXPECT_LT(r.seconds, 1.0);
  EXPECT_NE(ReadText(workspace_ + "/src/m7/f57.txt")
                .find("module 57 line 19\nchanged 57\nmodule 57 line 21\n"),
            std::string::npos);
}

}  // namespace
}  // namespace sandrun::testing
