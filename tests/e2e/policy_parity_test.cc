// `policy check` against `exec` (issue 13): a table of commands x configs, each row driven
// through the binary. policy check says allow/deny/ask/needs-review; exec --json (no server, so
// an `ask` resolves through askFallback) must then have done exactly that, proved by a marker file
// each command writes: allow (or ask with askFallback.approved) ran it, deny (or ask not approved)
// refused it and wrote nothing, needs-review ran or refused as the reviewer answered (and policy
// check never ran the reviewer). Where `rewritten` is set, `mark` records the path it was started
// from ($0), so the marker proves the rewritten (pinned) form ran, not the text as given.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

struct Command {
  const char* name;
  const char* text;   // {M} marker, {WS} workspace, {D} marker dir (as the command sees them)
  const char* env;    // one --env KEY=VALUE, or nullptr
  bool gateway_only;  // needs python3 (not in the minimal image)
};

const Command kCommands[] = {
    {"plain", "touch {M}", nullptr, false},
    {"mark", "mark {M}", nullptr, false},
    {"absolute", "/bin/touch {M}", nullptr, false},
    {"and", "true && touch {M}", nullptr, false},
    {"or", "false || touch {M}", nullptr, false},
    {"seq", "echo a; touch {M}", nullptr, false},
    {"pipe_head", "printf 'a\\nb\\n' | head -n 1 | tee {M}", nullptr, false},
    {"head_file", "head -n 1 {WS}/a.txt && touch {M}", nullptr, false},
    {"pipe_wc", "printf 'x\\n' | wc -l | tee {M}", nullptr, false},
    {"subshell", "(touch {M})", nullptr, false},
    {"redirect", "echo hi > {M}", nullptr, false},
    {"sh_c", "sh -c 'true && touch {M}'", nullptr, false},
    {"python_c", "python3 -c 'open(\"{M}\", \"w\")'", nullptr, true},
    {"env_assign", "env X=1 touch {M}", nullptr, false},
    {"timeout", "timeout 5 touch {M}", nullptr, false},
    {"xargs", "echo {M} | xargs touch", nullptr, false},
    {"find_exec", "find {D} -maxdepth 0 -exec touch {M} \\;", nullptr, false},
    {"script", "python3 {WS}/ok.py {M}", nullptr, true},
    {"script_bleed", "python3 {WS}/bleed.py {M}", nullptr, true},
    {"glob", "ls {WS}/*.txt && touch {M}", nullptr, false},
    {"quoted", "touch '{M}'", nullptr, false},
    {"approve", "/approve abc123 allow-once || touch {M}", nullptr, false},
    {"ld_preload", "touch {M}", "LD_PRELOAD=/nonexistent/x.so", false},
    // A copy put earlier on PATH during the run: the rewritten form still runs bin1/mark.
    {"path_race", "cp {WS}/bin2/mark {WS}/bin0/mark && mark {M}", nullptr, false},
};

struct ConfigCase {
  const char* name;
  bool sandbox;
  const char* exec;      // members of tools.exec besides loginShellPath/pathPrepend
  const char* top;       // more top-level members ("" = none)
  const char* defaults;  // approvals file "defaults" object
  bool entries;          // the allowlist holds the binaries the commands use
  const char* reviewer;  // the reviewer's answer (mode auto), or nullptr
};

const ConfigCase kConfigs[] = {
    {"full", false, R"("security": "full", "ask": "off")", "", "{}", false, nullptr},
    {"deny", false, R"("security": "deny")", "", "{}", true, nullptr},
    {"allowlist", false, R"("security": "allowlist", "ask": "off")", "", "{}", true, nullptr},
    {"allowlist_empty", false, R"("security": "allowlist", "ask": "off")", "", "{}", false,
     nullptr},
    {"no_safe_bins", false, R"("security": "allowlist", "ask": "off", "safeBins": [])", "", "{}",
     true, nullptr},
    {"on_miss_fb_deny", false, R"("security": "allowlist", "ask": "on-miss")", "",
     R"({"askFallback": "deny"})", true, nullptr},
    {"on_miss_fb_allowlist", false, R"("security": "allowlist", "ask": "on-miss")", "",
     R"({"askFallback": "allowlist"})", true, nullptr},
    {"always_fb_full", false, R"("security": "full", "ask": "always")", "",
     R"({"askFallback": "full"})", false, nullptr},
    {"always_fb_deny", false, R"("security": "full", "ask": "always")", "",
     R"({"askFallback": "deny"})", false, nullptr},
    {"always_fb_allowlist", false, R"("security": "allowlist", "ask": "always")", "",
     R"({"askFallback": "allowlist"})", true, nullptr},
    {"strict_inline", false, R"("security": "full", "ask": "off", "strictInlineEval": true)", "",
     R"({"askFallback": "full"})", false, nullptr},
    {"review_allow", false, R"("security": "allowlist", "ask": "on-miss", "mode": "auto")", "",
     R"({"askFallback": "deny"})", false, "allow"},
    {"review_deny", false, R"("security": "allowlist", "ask": "on-miss", "mode": "auto")", "",
     R"({"askFallback": "deny"})", false, "deny"},
    {"elevated_full", true, R"("security": "allowlist", "ask": "on-miss")",
     R"("tools": {"elevated": {"enabled": true, "allowFrom": {"cli": ["*"]}, )"
     R"("defaultLevel": "full"}})",
     "{}", false, nullptr},
    {"elevated_closed", true, R"("security": "full", "ask": "off")",
     R"("tools": {"elevated": {"enabled": true, "allowFrom": {"cli": ["nobody-else"]}, )"
     R"("defaultLevel": "full"}})",
     "{}", false, nullptr},
    {"sandbox_full", true, R"("security": "full", "ask": "off")", "", "{}", false, nullptr},
    {"sandbox_allowlist", true, R"("host": "sandbox", "security": "allowlist", "ask": "always")",
     "", R"({"askFallback": "deny"})", false, nullptr},
    {"sandbox_deny", true, R"("security": "deny")", "", "{}", false, nullptr},
};

struct Row {
  const Command* command;
  const ConfigCase* config;
};

std::vector<Row> AllRows() {
  std::vector<Row> rows;
  for (const ConfigCase& c : kConfigs) {
    // Executed in a container unless elevated (available, level full) moves it to the host;
    // elevated that is not available is off, not refused: the sandbox runs the command.
    const bool in_container = c.sandbox && std::string(c.name) != "elevated_full";
    for (const Command& cmd : kCommands) {
      if (in_container && cmd.gateway_only) continue;
      rows.push_back({&cmd, &c});
    }
  }
  return rows;
}

std::string Substitute(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteExecutable(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0755);
}

class PolicyParity : public SandrunHome, public ::testing::WithParamInterface<Row> {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    const ConfigCase& c = *GetParam().config;
    in_container_ = c.sandbox && std::string(c.name) != "elevated_full";
    if (in_container_) {
      SANDRUN_REQUIRE_DOCKER(client);
    }
    namespace fs = std::filesystem;
    for (const char* dir : {"/bin0", "/bin1", "/bin2", "/marks"}) {
      fs::create_directories(workspace_ + dir);
      fs::permissions(workspace_ + dir, fs::perms::all);
    }
    // `mark FILE` writes the path it was started from: $0 tells which copy ran.
    WriteExecutable(workspace_ + "/bin1/mark", "#!/bin/sh\nprintf '%s\\n' \"$0\" > \"$1\"\n");
    WriteExecutable(workspace_ + "/bin2/mark", "#!/bin/sh\nprintf '%s\\n' \"$0\" > \"$1\"\n");
    std::ofstream(workspace_ + "/a.txt") << "alpha\n";
    std::ofstream(workspace_ + "/ok.py") << "import sys\nopen(sys.argv[1], 'w').write('ok')\n";
    std::ofstream(workspace_ + "/bleed.py")
        << "import sys\nopen(sys.argv[1], 'w').write('$SHELL_LEAK')\n";
    seen_ = marks_ + "/reviewer-ran";
    ws_ = in_container_ ? "/workspace" : workspace_;
    const std::string bin0 = ws_ + "/bin0", bin1 = ws_ + "/bin1";
    std::string exec = std::string(c.exec) + R"(, "loginShellPath": false, "pathPrepend": [")" +
                       bin0 + "\", \"" + bin1 + "\"]";
    if (c.reviewer != nullptr) {
      exec += R"(, "reviewer": {"command": ["/bin/sh", "-c", "cat > /dev/null; touch )" + seen_ +
              "; echo " + c.reviewer + R"(", "--"], "timeoutMs": 3000})";
    }
    std::string top = std::string(c.top);
    // tools.exec sits next to tools.elevated when the config has one.
    if (top.find("\"tools\"") != std::string::npos) {
      top = Substitute(top, "\"tools\": {", "\"tools\": {\"exec\": {" + exec + "}, ");
    } else {
      top = "\"tools\": {\"exec\": {" + exec + "}}";
    }
    const std::string sandbox = c.sandbox ? R"({"mode": "all", "workspaceAccess": "rw", )"
                                            R"("docker": {"image": "sandrun-sandbox:minimal"}})"
                                          : R"({"mode": "off"})";
    Config("{\"sandbox\": " + sandbox + ", " + top + "}");
    std::string list;
    if (c.entries) {
      for (const char* bin : {"touch", "tee", "cp", "xargs", "find", "python3", "timeout"}) {
        std::error_code ec;
        auto real = fs::canonical(fs::path("/usr/bin") / bin, ec);
        if (ec) continue;
        list += (list.empty() ? "" : ", ") + ("{\"pattern\": \"" + real.string() + "\"}");
      }
      list += ", {\"pattern\": \"" + workspace_ + "/bin1/mark\"}";
    }
    std::ofstream(home_ + "/exec-approvals.json")
        << R"({"version": 1, "defaults": )" << c.defaults
        << R"(, "agents": {"main": {"allowlist": [)" << list << "]}}}";
    marker_ = "/marks/" + std::string(GetParam().command->name);
    command_ = Substitute(
        Substitute(Substitute(GetParam().command->text, "{M}", ws_ + marker_), "{WS}", ws_), "{D}",
        ws_ + "/marks");
  }

  std::vector<std::string> EnvFlags() const {
    const char* env = GetParam().command->env;
    if (env == nullptr) return {};
    return {"--env", env};
  }

  bool in_container_ = false;
  std::string ws_;       // the workspace as the command sees it
  std::string marker_;   // below the workspace
  std::string command_;  // the command as run
  std::string seen_;     // the reviewer's own marker
};

TEST_P(PolicyParity, ExecDoesWhatPolicyCheckSays) {
  const std::string marker = workspace_ + marker_;
  SCOPED_TRACE("config " + std::string(GetParam().config->name) + ", command: " + command_);
  std::vector<std::string> check_args = {"policy", "check"};
  for (const auto& f : EnvFlags()) check_args.push_back(f);
  check_args.push_back("--");
  check_args.push_back(command_);
  auto checked = Sandrun(check_args);
  ASSERT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  auto check = Parsed(checked.out);
  ASSERT_TRUE(check.IsObject()) << checked.out;
  const std::string decision = JsonString(check, "decision");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "policy check ran the command";
  EXPECT_FALSE(std::filesystem::exists(seen_)) << "policy check ran the reviewer";
  const auto* host = JsonMember(check, "host");
  const std::string effective = host ? JsonString(*host, "effective") : "";
  EXPECT_EQ(effective, in_container_ ? "sandbox" : "gateway") << checked.out;

  // What exec must do, from what policy check said.
  bool must_run = false;
  if (decision == "allow") {
    must_run = true;
  } else if (decision == "deny") {
    must_run = false;
  } else if (decision == "ask") {
    const auto* fallback = JsonMember(check, "askFallback");
    ASSERT_TRUE(fallback != nullptr && fallback->IsObject())
        << "policy check said ask without an askFallback {\"approved\": bool} member: "
        << checked.out;
    must_run = JsonBool(*fallback, "approved");
  } else if (decision == "needs-review") {
    ASSERT_NE(GetParam().config->reviewer, nullptr) << "needs-review without a reviewer";
    must_run = std::string(GetParam().config->reviewer) == "allow";
  } else {
    FAIL() << "unknown decision: " << checked.out;
  }

  std::vector<std::string> flags = {"--json", "--timeout", "20"};
  for (const auto& f : EnvFlags()) flags.push_back(f);
  auto r = Exec(flags, command_);
  const std::string said = "policy check said " + decision + " (" + JsonString(check, "reason") +
                           "): " + checked.out + "\nexec: " + r.out + r.err;
  auto done = Parsed(r.out);
  EXPECT_EQ(std::filesystem::exists(seen_), decision == "needs-review")
      << "the reviewer runs exactly when policy check says needs-review; " << said;
  if (must_run) {
    EXPECT_EQ(r.exit_code, 0) << said;
    EXPECT_EQ(JsonMember(done, "error"), nullptr) << said;
    ASSERT_TRUE(std::filesystem::exists(marker)) << "exec did not run it; " << said;
    const auto* rewritten = JsonMember(check, "rewritten");
    const bool pinned = rewritten != nullptr && rewritten->IsString();
    if (std::string(GetParam().command->text).find("mark {M}") != std::string::npos) {
      // bin0/mark exists only when the path_race row's cp ran before the lookup.
      const bool raced = std::string(GetParam().command->name) == "path_race";
      const std::string ran = ws_ + (pinned || !raced ? "/bin1/mark\n" : "/bin0/mark\n");
      EXPECT_EQ(Slurp(marker), ran)
          << "the form that ran is not the one policy check gave; " << said;
      if (pinned) {
        EXPECT_NE(std::string(rewritten->GetString()).find(ws_ + "/bin1/mark"), std::string::npos)
            << said;
      }
    }
    if (std::string(GetParam().command->name) == "pipe_head") {
      EXPECT_EQ(Slurp(marker), "a\n") << said;
    }
  } else {
    EXPECT_EQ(r.exit_code, 2) << "exec ran or failed otherwise; " << said;
    EXPECT_NE(JsonMember(done, "error"), nullptr) << said;
    EXPECT_FALSE(std::filesystem::exists(marker)) << "exec ran a refused command; " << said;
    EXPECT_FALSE(JsonMember(check, "rewritten") && JsonMember(check, "rewritten")->IsString())
        << said;
  }
}

std::string RowName(const ::testing::TestParamInfo<Row>& info) {
  return std::string(info.param.config->name) + "__" + info.param.command->name;
}

INSTANTIATE_TEST_SUITE_P(Table, PolicyParity, ::testing::ValuesIn(AllRows()), RowName);

}  // namespace
}  // namespace sandrun::testing
