// The words after "--" of `sandrun exec` and `sandrun policy check`, through the binary: never
// reparsed (CLI11 read "[a,b]" as a list and ran `echo X` for "[echo,X]"); one word is the shell
// text byte for byte, several are each quoted for sh and run as that argv. Gateway runs
// (sandbox.mode off): no Docker needed.
#include <gtest/gtest.h>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

class CliWords : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    Config(R"({"sandbox": {"mode": "off"}})");
  }

  ProcessResult ExecWords(const std::vector<std::string>& words) {
    std::vector<std::string> args = {"exec", "--"};
    args.insert(args.end(), words.begin(), words.end());
    return Sandrun(args);
  }

  // The argv the analyser saw for `policy check -- words...` (its first segment).
  std::vector<std::string> CheckedArgv(const std::vector<std::string>& words) {
    std::vector<std::string> args = {"policy", "check", "--"};
    args.insert(args.end(), words.begin(), words.end());
    auto r = Sandrun(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto doc = Parsed(r.out);
    const auto* analysis = JsonMember(doc, "analysis");
    const auto* segments = analysis ? JsonMember(*analysis, "segments") : nullptr;
    if (segments == nullptr || !segments->IsArray() || segments->Empty()) {
      ADD_FAILURE() << "no segments: " << r.out;
      return {};
    }
    return JsonStringArray((*segments)[0], "argv");
  }
};

// Old code: "[echo,X]" became the two words echo X and printed "X".
TEST_F(CliWords, OneBracketedWordIsShellTextNotAList) {
  auto r = ExecWords({"[echo,X]"});
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.exit_code, 127) << r.err;  // sh: [echo,X]: not found
}

// Old code: "[ -d / ]" ran `-d /` (exit 127).
TEST_F(CliWords, TestBracketsStayACommand) {
  EXPECT_EQ(ExecWords({"[ -d / ]"}).exit_code, 0);
  EXPECT_EQ(ExecWords({"[ -d /no/such/dir ]"}).exit_code, 1);
}

// Red-team finding: text starting with '-' reached the shell as its own option (`bash -c -x`:
// "option requires an argument"; `--help` printed bash's usage). It is the command.
TEST_F(CliWords, TextStartingWithADashIsTheCommandNotAShellOption) {
  auto r = ExecWords({"-x"});
  EXPECT_EQ(r.exit_code, 127) << r.err;
  EXPECT_NE(r.err.find("-x"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("option requires an argument"), std::string::npos) << r.err;
  auto help = ExecWords({"--help"});
  EXPECT_EQ(help.exit_code, 127) << help.err;
  EXPECT_EQ(help.out.find("Usage"), std::string::npos) << help.out;
}

TEST_F(CliWords, OneWordIsTheShellTextByteForByte) {
  auto r = ExecWords({"x=\"a  b\"; echo \"$x\" $((1+2)) 'q\\' | tr -d \\\\n; echo"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "a  b 3 q\\\n");
}

// Old code: the words were joined with bare spaces, so this was `printf %s| a  b it's`: a pipe
// and an unterminated quote.
TEST_F(CliWords, SeveralWordsRunAsThatArgv) {
  auto r = ExecWords({"printf", "%s|", "a  b", "it's"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "a  b|it's|");
}

TEST_F(CliWords, SeveralWordsKeepQuotesDollarsBackslashesNewlinesAndEmptyStrings) {
  auto r = ExecWords({"printf", "<%s>", "[a,b]", "$HOME", "$(id)", "`id`",  "a\\b",
                      "x\ny",   "",     "'",     "\"",    "*",     "~",     "A=1",
                      "if",     "%1",   "a;b",   "a|b",   "#c",    "{x,y}", "!"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "<[a,b]><$HOME><$(id)><`id`><a\\b><x\ny><><'><\"><*><~><A=1><if><%1><a;b><a|b><#c>"
            "<{x,y}><!>");
}

TEST_F(CliWords, OnlyEmptyWordsStillRunAsArguments) {
  auto r = ExecWords({"printf", "%s|", "", ""});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "||");
}

// The first word is the program, whatever it looks like: a reserved word or an assignment is a
// command name, not shell syntax.
TEST_F(CliWords, TheFirstWordIsAProgramName) {
  EXPECT_EQ(ExecWords({"if", "true"}).exit_code, 127);
  EXPECT_EQ(ExecWords({"A=1", "true"}).exit_code, 127);
}

// exec refuses with its own table's 125; policy check keeps 2.
TEST_F(CliWords, ACommandNotAfterDoubleDashIsRefused) {
  auto before = Sandrun({"exec", "echo", "hi"});
  EXPECT_EQ(before.exit_code, 125);
  EXPECT_NE(before.err.find("give the command after --"), std::string::npos) << before.err;
  EXPECT_EQ(before.out, "");
  auto both = Sandrun({"exec", "echo", "--", "hi"});
  EXPECT_EQ(both.exit_code, 125) << both.out;
  auto none = Sandrun({"exec"});
  EXPECT_EQ(none.exit_code, 125);
  auto blank = ExecWords({""});
  EXPECT_EQ(blank.exit_code, 125);
  EXPECT_NE(blank.err.find("Provide a command"), std::string::npos) << blank.err;
  auto check = Sandrun({"policy", "check", "ls"});
  EXPECT_EQ(check.exit_code, 2);
  EXPECT_NE(check.err.find("give the command after --"), std::string::npos) << check.err;
}

// Usage errors of `sandrun exec` are "refused before anything ran": 125 as in its table, with or
// without --json, and nothing runs (old code: CLI11's errors exited 2). `call` keeps 2.
TEST_F(CliWords, ExecUsageErrorsExit125AndRunNothing) {
  const std::string marker = workspace_ + "/ran";
  const std::string touch = "touch " + marker;
  struct Case {
    std::vector<std::string> args;
    const char* says;  // what CLI11's message names
  };
  const std::vector<Case> cases = {
      {{"exec", "--bogus", "--", touch}, "--bogus"},
      {{"exec", "--json", "--bogus", "--", touch}, "--bogus"},
      {{"exec", "--timeout", "--", touch}, "--timeout"},
      {{"exec", "--timeout", "abc", "--", touch}, "--timeout"},
      {{"exec", "--timeout=-1", "--", touch}, "--timeout"},
      {{"exec", "--yield-ms", "soon", "--", touch}, "--yield-ms"},
      {{"exec", "--json", "--exit-code", "--timeout", "x", "--", touch}, "--timeout"},
  };
  for (const Case& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    auto r = Sandrun(c.args);
    EXPECT_EQ(r.exit_code, 125) << shown << r.err;
    EXPECT_EQ(r.out, "") << shown;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << shown << r.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << shown << "ran the command";
  }
  auto ran = Sandrun({"exec", "--timeout", "5", "--", touch});  // the same flags, well formed
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_TRUE(std::filesystem::exists(marker));

  auto call = Sandrun({"call", "--bogus"});
  EXPECT_EQ(call.exit_code, 2) << call.err;
  auto help = Sandrun({"exec", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("usage errors"), std::string::npos) << help.out;
}

// A second "--" and words looking like options are part of the command.
TEST_F(CliWords, WordsAfterDoubleDashAreNeverOptions) {
  auto r = ExecWords({"printf", "%s|", "--", "--json", "-d", "--host"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "--|--json|-d|--host|");
}

// Old code: "[A=1,B=2]" became two --env values.
TEST_F(CliWords, AnEnvValueIsNotAList) {
  auto r = Sandrun({"exec", "--env", "[A=1,B=2]", "--", "echo \"${A-unset}\""});
  EXPECT_NE(r.out, "1\n");
  EXPECT_EQ(r.exit_code, 125) << r.out << r.err;  // "[A" is not a variable name
  auto two = Sandrun({"exec", "--env", "A=1", "--env", "B=2", "--", "echo \"$A$B\""});
  EXPECT_EQ(two.out, "12\n") << two.err;
}

// policy check takes its words by the same rule (old code: ["-d","/"] and ["ls","a","b"]).
TEST_F(CliWords, PolicyCheckSeesTheSameCommand) {
  EXPECT_EQ(CheckedArgv({"[ -d / ]"}), (std::vector<std::string>{"[", "-d", "/", "]"}));
  EXPECT_EQ(CheckedArgv({"ls", "[a,b]"}), (std::vector<std::string>{"ls", "[a,b]"}));
  EXPECT_EQ(CheckedArgv({"printf", "%s|", "a  b", "it's", ""}),
            (std::vector<std::string>{"printf", "%s|", "a  b", "it's", ""}));
}

// Other subcommands still read "--" as CLI11 does.
TEST_F(CliWords, OtherSubcommandsKeepTheirDoubleDash) {
  auto r = Sandrun({"call", "--", R"({"tool":"exec","command":"echo via-call"})"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("via-call"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sandrun::testing
