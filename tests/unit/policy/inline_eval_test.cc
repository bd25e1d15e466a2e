// strictInlineEval detection (reference §5.8 row by row, §10), and the interpreter-like and
// shell name lists (§5.7). Rows marked "sandrun" are forms OpenClaw misses.
#include "runner/policy/inline_eval.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace sandrun::policy {
namespace {

struct EvalRow {
  std::vector<std::string> argv;
  std::optional<std::string> hit;
};

void PrintTo(const EvalRow& r, std::ostream* os) {
  for (const auto& a : r.argv) *os << "'" << a << "' ";
  *os << "-> " << r.hit.value_or("(none)");
}

class InlineEvalTest : public ::testing::TestWithParam<EvalRow> {};

TEST_P(InlineEvalTest, Detects) { EXPECT_EQ(DetectInlineEval(GetParam().argv), GetParam().hit); }

const std::optional<std::string> kNone;

INSTANTIATE_TEST_SUITE_P(
    Python, InlineEvalTest,
    ::testing::Values(
        EvalRow{{"python3", "-c", "print(1)"}, "python3 -c"},
        EvalRow{{"python", "-c", "x"}, "python -c"}, EvalRow{{"python2", "-c", "x"}, "python2 -c"},
        EvalRow{{"pypy", "-c", "x"}, "pypy -c"}, EvalRow{{"pypy3", "-c", "x"}, "pypy3 -c"},
        EvalRow{{"/usr/bin/python3", "-c", "x"}, "python3 -c"},
        EvalRow{{"Python3", "-C", "x"}, "python3 -c"},  // lowercased
        EvalRow{{"python3.11", "-c", "x"}, "python3.11 -c"},
        EvalRow{{"/usr/local/bin/pypy3.9", "-c", "x"}, "pypy3.9 -c"},
        EvalRow{{"python3", " -c ", "x"}, "python3 -c"},  // trimmed
        EvalRow{{"python3", "-u", "-c", "x"}, "python3 -c"},
        EvalRow{{"python3", "script.py", "-c", "x"}, "python3 -c"},  // scans every token
        EvalRow{{"python3", "script.py"}, kNone}, EvalRow{{"python3", "-m", "http.server"}, kNone},
        EvalRow{{"python3", "--", "-c", "x"}, kNone},  // stops at "--"
        EvalRow{{"python3", "-V"}, kNone}, EvalRow{{"python3", "-"}, kNone},
        EvalRow{{"python3"}, kNone}, EvalRow{{"python3", "", "x.py"}, kNone},
        // sandrun: clusters and attached code.
        EvalRow{{"python3", "-Ic", "x"}, "python3 -c"},
        EvalRow{{"python3", "-cprint(1)"}, "python3 -c"},
        EvalRow{{"python3", "-bBc", "x"}, "python3 -c"},
        EvalRow{{"python3", "-Wc"}, kNone},  // -W takes "c" as its value
        EvalRow{{"python3", "-mc"}, kNone}, EvalRow{{"python3", "-Xc"}, kNone},
        EvalRow{{"python3", "--check"}, kNone}, EvalRow{{"python3", "--", "-Ic"}, kNone}));

INSTANTIATE_TEST_SUITE_P(
    Node, InlineEvalTest,
    ::testing::Values(
        EvalRow{{"node", "-e", "x"}, "node -e"}, EvalRow{{"node", "--eval", "x"}, "node --eval"},
        EvalRow{{"node", "-p", "x"}, "node -p"}, EvalRow{{"node", "--print", "x"}, "node --print"},
        EvalRow{{"nodejs", "-e", "x"}, "nodejs -e"}, EvalRow{{"bun", "-e", "x"}, "bun -e"},
        EvalRow{{"deno", "--eval", "x"}, "deno --eval"}, EvalRow{{"node", "-E", "x"}, "node -e"},
        EvalRow{{"node", "--EVAL", "x"}, "node --eval"},
        EvalRow{{"/usr/bin/node", "-p", "1"}, "node -p"},
        EvalRow{{"node", "--inspect", "-e", "x"}, "node -e"}, EvalRow{{"node", "app.js"}, kNone},
        EvalRow{{"node", "--", "-e", "x"}, kNone},
        EvalRow{{"node", "-r", "dotenv/config", "app.js"}, kNone},
        EvalRow{{"node", "--inspect", "app.js"}, kNone}, EvalRow{{"node"}, kNone},
        // sandrun
        EvalRow{{"node", "-pe", "x"}, "node -p"}, EvalRow{{"node", "-ep", "x"}, "node -e"},
        EvalRow{{"node", "--eval=x"}, "node --eval"},
        EvalRow{{"node", "--print=1"}, "node --print"}, EvalRow{{"node18", "-e", "x"}, "node18 -e"},
        EvalRow{{"node", "--", "-pe"}, kNone}));

INSTANTIATE_TEST_SUITE_P(
    Awk, InlineEvalTest,
    ::testing::Values(
        // The flag table.
        EvalRow{{"awk", "-e", "x"}, "awk -e"}, EvalRow{{"awk", "-E", "x"}, "awk -e"},
        EvalRow{{"gawk", "--source", "BEGIN{}"}, "gawk --source"},
        EvalRow{{"gawk", "--source=BEGIN{}"}, "gawk --source"},
        EvalRow{{"gawk", "--SOURCE=x"}, "gawk --source"},
        EvalRow{{"awk", "-f", "lib.awk", "-e", "x"}, "awk -e"},
        EvalRow{{"awk", "--", "-e"}, "awk inline program"},  // table stops; carrier: "--" + token
        // The positional program.
        EvalRow{{"awk", "{print $1}"}, "awk inline program"},
        EvalRow{{"gawk", "{print}"}, "gawk inline program"},
        EvalRow{{"mawk", "-F:", "{print}"}, "mawk inline program"},
        EvalRow{{"nawk", "-vx=1", "{print}"}, "nawk inline program"},
        EvalRow{{"awk", "-F", ":", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "--field-separator", ":", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "-v", "x=1", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "--assign", "x=1", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "-i", "lib", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "--include", "lib", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "-l", "ext", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "--load", "ext", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "-W", "posix", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "--", "{print}"}, "awk inline program"},
        EvalRow{{"awk", "", "{print}"}, "awk inline program"},
        EvalRow{{"awk", " -F", "{print}"}, "awk inline program"},  // " -F" is the program
        EvalRow{{"/usr/bin/awk", "BEGIN{system(\"id\")}"}, "awk inline program"},
        EvalRow{{"awk", "-F", ":"}, kNone}, EvalRow{{"awk", "-v", "x=1"}, kNone},
        EvalRow{{"awk", "-f", "prog.awk", "input"}, kNone},
        EvalRow{{"awk", "--file", "prog.awk", "input"}, kNone},
        EvalRow{{"awk", "-F:", "-f", "prog.awk"}, kNone}, EvalRow{{"awk", "--"}, kNone},
        EvalRow{{"awk"}, kNone}, EvalRow{{"awk", "-W", "version"}, kNone},
        // sandrun
        EvalRow{{"gawk", "-eBEGIN{}"}, "gawk -e"},
        EvalRow{{"gawk", "-W", "source=BEGIN{}"}, "gawk --source"},
        EvalRow{{"gawk", "-Wsource=BEGIN{}"}, "gawk --source"},
        EvalRow{{"gawk", "--sou=BEGIN{}"}, "gawk --source"},
        // OpenClaw already reports this one (as a program): its description is kept.
        EvalRow{{"gawk", "--so", "BEGIN{}"}, "gawk inline program"},
        EvalRow{{"gawk", "-W", "sandbox"}, kNone}));

INSTANTIATE_TEST_SUITE_P(
    RubyLuaOsascript, InlineEvalTest,
    ::testing::Values(
        EvalRow{{"ruby", "-e", "puts 1"}, "ruby -e"}, EvalRow{{"lua", "-e", "print(1)"}, "lua -e"},
        EvalRow{{"osascript", "-e", "x"}, "osascript -e"},
        EvalRow{{"osascript", "-l", "JavaScript", "-e", "x"}, "osascript -e"},
        EvalRow{{"ruby", "-E", "x"}, "ruby -e"},  // lowercased, as OpenClaw
        EvalRow{{"lua5.4", "-e", "x"}, "lua5.4 -e"}, EvalRow{{"ruby3.1", "-e", "x"}, "ruby3.1 -e"},
        EvalRow{{"ruby", "script.rb"}, kNone}, EvalRow{{"lua", "script.lua"}, kNone},
        EvalRow{{"osascript", "script.scpt"}, kNone}, EvalRow{{"ruby", "--", "-e"}, kNone},
        // sandrun
        EvalRow{{"ruby", "-ne", "print"}, "ruby -e"}, EvalRow{{"ruby", "-ane", "x"}, "ruby -e"},
        EvalRow{{"ruby", "-Ie", "x.rb"}, kNone}, EvalRow{{"ruby", "-rjson"}, kNone},
        EvalRow{{"lua", "-eprint(1)"}, "lua -e"},
        EvalRow{{"osascript", "-ebeep"}, "osascript -e"}));

INSTANTIATE_TEST_SUITE_P(
    PerlPhp, InlineEvalTest,
    ::testing::Values(
        EvalRow{{"perl", "-e", "print 1"}, "perl -e"}, EvalRow{{"perl", "-E", "say 1"}, "perl -e"},
        EvalRow{{"perl", "-pi", "-e", "s/a/b/"}, "perl -e"},
        EvalRow{{"perl5.36.0", "-e", "1"}, "perl5.36.0 -e"}, EvalRow{{"perl", "x.pl"}, kNone},
        EvalRow{{"perl", "--", "-e"}, kNone}, EvalRow{{"php", "-r", "echo 1;"}, "php -r"},
        EvalRow{{"php", "-R", "x"}, "php -r"}, EvalRow{{"php8.2", "-r", "x"}, "php8.2 -r"},
        EvalRow{{"php", "script.php"}, kNone}, EvalRow{{"php", "--", "-r"}, kNone},
        // sandrun
        EvalRow{{"perl", "-ne", "print"}, "perl -e"}, EvalRow{{"perl", "-lne", "x"}, "perl -e"},
        EvalRow{{"perl", "-lE", "say"}, "perl -e"},
        EvalRow{{"perl", "-Mstrict", "-we", "1"}, "perl -e"},
        EvalRow{{"perl", "-Iexe", "script.pl"}, kNone},
        EvalRow{{"perl", "-ie", "x"}, kNone},  // -i takes "e" as the backup suffix
        EvalRow{{"perl", "-CSDe", "x"}, kNone}, EvalRow{{"perl", "-MEnglish", "x.pl"}, kNone},
        EvalRow{{"php", "-recho 1;"}, "php -r"}));

INSTANTIATE_TEST_SUITE_P(
    Find, InlineEvalTest,
    ::testing::Values(
        EvalRow{{"find", ".", "-exec", "rm", "{}", ";"}, "find -exec"},
        EvalRow{{"find", ".", "-execdir", "x", ";"}, "find -execdir"},
        EvalRow{{"find", ".", "-ok", "x", ";"}, "find -ok"},
        EvalRow{{"find", ".", "-okdir", "x", ";"}, "find -okdir"},
        EvalRow{{"find", "--", ".", "-exec", "x", ";"}, "find -exec"},  // scans past "--"
        EvalRow{{"find", ".", "-EXEC", "x"}, "find -exec"},
        EvalRow{{"/usr/bin/find", "/", "-name", "x", "-exec", "y", "+"}, "find -exec"},
        EvalRow{{"find", ".", "-name", "*.c"}, kNone}, EvalRow{{"find", ".", "-delete"}, kNone},
        EvalRow{{"find", ".", "-executable"}, kNone}, EvalRow{{"find", "-okay"}, kNone},
        EvalRow{{"find"}, kNone}));

INSTANTIATE_TEST_SUITE_P(
    Make, InlineEvalTest,
    ::testing::Values(
        EvalRow{{"make", "-f", "Makefile.x"}, "make -f"},
        EvalRow{{"make", "--file", "x"}, "make --file"},
        EvalRow{{"make", "--makefile", "x"}, "make --makefile"},
        EvalRow{{"make", "--eval", "x"}, "make --eval"}, EvalRow{{"make", "-fMakefile"}, "make -f"},
        EvalRow{{"make", "-F", "x"}, "make -f"}, EvalRow{{"make", "--file=x"}, "make --file"},
        EvalRow{{"make", "--makefile=x"}, "make --makefile"},
        EvalRow{{"make", "--eval=x"}, "make --eval"}, EvalRow{{"make", "-E", "x"}, "make -E"},
        EvalRow{{"make", "-Ex:;id"}, "make -E"}, EvalRow{{"gmake", "-f", "x"}, "gmake -f"},
        EvalRow{{"make", "-e"}, kNone},  // --environment-overrides: "-E" is raw
        EvalRow{{"make"}, kNone}, EvalRow{{"make", "all"}, kNone},
        EvalRow{{"make", "-C", "dir"}, kNone}, EvalRow{{"make", "-j4"}, kNone},
        EvalRow{{"make", "--", "-f"}, kNone}, EvalRow{{"make", "--environment-overrides"}, kNone},
        // sandrun
        EvalRow{{"make", "-kf", "x"}, "make -f"}, EvalRow{{"make", "-sE", "x"}, "make -E"},
        EvalRow{{"make", "-Cf"}, kNone}, EvalRow{{"make", "-jf"}, kNone},
        EvalRow{{"make", "--fil=x"}, "make --file"},
        EvalRow{{"make", "--mak", "x"}, "make --makefile"},
        EvalRow{{"make", "--ev=x"}, "make --eval"}));

INSTANTIATE_TEST_SUITE_P(
    Sed, InlineEvalTest,
    ::testing::Values(
        EvalRow{{"sed", "-e", "s/a/b/"}, "sed -e"}, EvalRow{{"sed", "-es/a/b/"}, "sed -e"},
        EvalRow{{"gsed", "-e", "p"}, "gsed -e"}, EvalRow{{"sed", "-n", "-e", "p", "f"}, "sed -e"},
        // Reference §10: a plain script is an inline program.
        EvalRow{{"sed", "s/a/b/"}, "sed inline program"},
        EvalRow{{"sed", "-n", "p"}, "sed inline program"},
        EvalRow{{"gsed", "s/a/b/"}, "gsed inline program"},
        EvalRow{{"SED", "-E", "s/a/b/"}, "sed inline program"},  // "-E" is not the raw "-e"
        EvalRow{{"sed", "-i", "s/a/b/", "f"}, "sed inline program"},
        EvalRow{{"sed", "--in-place", "s/a/b/", "f"}, "sed inline program"},
        EvalRow{{"sed", "-l", "5", "p"}, "sed inline program"},
        EvalRow{{"sed", "--line-length", "5", "p"}, "sed inline program"},
        EvalRow{{"sed", "--", "p"}, "sed inline program"},
        EvalRow{{"sed", "-ne", "p"}, "sed inline program"},
        EvalRow{{"sed", "--expression", "p"}, "sed inline program"},
        EvalRow{{"sed", "-f", "script.sed"}, kNone},
        EvalRow{{"sed", "-f", "script.sed", "input"}, kNone},
        EvalRow{{"sed", "--file", "x", "input"}, kNone}, EvalRow{{"sed", "-l", "5"}, kNone},
        EvalRow{{"sed"}, kNone}, EvalRow{{"sed", "--help"}, kNone}, EvalRow{{"sed", "-n"}, kNone},
        EvalRow{{"sed", "--"}, kNone},
        // sandrun
        EvalRow{{"sed", "-nep"}, "sed -e"}, EvalRow{{"sed", "--expression=p"}, "sed --expression"},
        EvalRow{{"sed", "--expr=p"}, "sed --expression"},
        EvalRow{{"sed", "-ie"}, kNone}));  // -i takes "e" as the backup suffix

INSTANTIATE_TEST_SUITE_P(
    Xargs, InlineEvalTest,
    ::testing::Values(EvalRow{{"xargs", "rm"}, "xargs inline command"},
                      EvalRow{{"xargs", "-0", "rm"}, "xargs inline command"},
                      EvalRow{{"xargs", "-n", "1", "echo"}, "xargs inline command"},
                      EvalRow{{"xargs", "--max-args", "1", "echo"}, "xargs inline command"},
                      EvalRow{{"xargs", "--max-args=1", "echo"}, "xargs inline command"},
                      EvalRow{{"xargs", "-I", "{}", "sh", "-c", "x"}, "xargs inline command"},
                      EvalRow{{"xargs", "-I{}", "echo"}, "xargs inline command"},
                      EvalRow{{"xargs", "-i", "echo"}, "xargs inline command"},
                      EvalRow{{"xargs", "--arg-file", "f", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "-a", "f", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "-d", ",", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "--delimiter", ",", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "-E", "END", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "-L", "1", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "--max-lines", "1", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "-P", "4", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "--max-procs", "4", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "-s", "99", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "--max-chars", "99", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "--eof", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "--replace", "cmd"}, "xargs inline command"},
                      EvalRow{{"xargs", "--", "echo"}, "xargs inline command"},
                      EvalRow{{"/usr/bin/xargs", "echo"}, "xargs inline command"},
                      EvalRow{{"xargs", "-0"}, kNone}, EvalRow{{"xargs", "-n", "1"}, kNone},
                      EvalRow{{"xargs", "-a", "file"}, kNone}, EvalRow{{"xargs", "-P", "4"}, kNone},
                      EvalRow{{"xargs", "--"}, kNone}, EvalRow{{"xargs"}, kNone},
                      EvalRow{{"xargs", "-r", "-t"}, kNone}));

INSTANTIATE_TEST_SUITE_P(
    NotInterpreters, InlineEvalTest,
    ::testing::Values(EvalRow{{}, kNone}, EvalRow{{""}, kNone}, EvalRow{{"ls", "-la"}, kNone},
                      EvalRow{{"bash", "-c", "x"}, kNone}, EvalRow{{"sh", "-c", "x"}, kNone},
                      EvalRow{{"env", "python3", "-c", "x"}, kNone},  // the caller unwraps
                      EvalRow{{"busybox", "awk", "{print}"}, kNone},
                      EvalRow{{"grep", "-e", "x"}, kNone}, EvalRow{{"jq", "-n", "env"}, kNone},
                      EvalRow{{"/"}, kNone}, EvalRow{{"/usr/bin/python3/"}, kNone},
                      EvalRow{{"pythonx", "-c", "x"}, kNone},
                      EvalRow{{"python-config", "-c"}, kNone}, EvalRow{{"3", "-c", "x"}, kNone}));

// ---- name lists -------------------------------------------------------------------------------

struct NameRow {
  std::string name;
  bool yes;
};

void PrintTo(const NameRow& r, std::ostream* os) { *os << "'" << r.name << "' -> " << r.yes; }

class InterpreterLikeTest : public ::testing::TestWithParam<NameRow> {};

TEST_P(InterpreterLikeTest, Classifies) {
  EXPECT_EQ(IsInterpreterLike(GetParam().name), GetParam().yes);
}

INSTANTIATE_TEST_SUITE_P(
    Listed, InterpreterLikeTest,
    ::testing::Values(NameRow{"python", true}, NameRow{"python2", true}, NameRow{"python3", true},
                      NameRow{"pypy", true}, NameRow{"pypy3", true}, NameRow{"node", true},
                      NameRow{"nodejs", true}, NameRow{"bun", true}, NameRow{"deno", true},
                      NameRow{"awk", true}, NameRow{"gawk", true}, NameRow{"mawk", true},
                      NameRow{"nawk", true}, NameRow{"ruby", true}, NameRow{"perl", true},
                      NameRow{"php", true}, NameRow{"lua", true}, NameRow{"osascript", true},
                      NameRow{"find", true}, NameRow{"make", true}, NameRow{"gmake", true},
                      NameRow{"sed", true}, NameRow{"gsed", true}, NameRow{"xargs", true}));

INSTANTIATE_TEST_SUITE_P(
    Forms, InterpreterLikeTest,
    ::testing::Values(NameRow{"/usr/bin/python3", true}, NameRow{"PYTHON3", true},
                      NameRow{"python3.11", true}, NameRow{"perl5.36.0", true},
                      NameRow{"lua5.4", true}, NameRow{"node18", true}, NameRow{"php8.2", true},
                      NameRow{"python3*", true}, NameRow{"/usr/bin/py*thon", true},
                      NameRow{"python[23]", true}, NameRow{"/opt/**/node", true},
                      NameRow{"ls", false}, NameRow{"bash", false}, NameRow{"sh", false},
                      NameRow{"grep", false}, NameRow{"wc", false}, NameRow{"jq", false},
                      NameRow{"pythonx", false}, NameRow{"mypython", false},
                      NameRow{"python-config", false}, NameRow{"", false}, NameRow{"3", false},
                      NameRow{"*", false}, NameRow{"env", false}, NameRow{"busybox", false},
                      NameRow{"finder", false}, NameRow{"seds", false}, NameRow{"/usr/bin/", false},
                      NameRow{"/usr/python3/ls", false}));

class ShellNameTest : public ::testing::TestWithParam<NameRow> {};

TEST_P(ShellNameTest, Classifies) { EXPECT_EQ(IsShellName(GetParam().name), GetParam().yes); }

INSTANTIATE_TEST_SUITE_P(
    Table, ShellNameTest,
    ::testing::Values(NameRow{"sh", true}, NameRow{"bash", true}, NameRow{"zsh", true},
                      NameRow{"dash", true}, NameRow{"ksh", true}, NameRow{"mksh", true},
                      NameRow{"fish", true}, NameRow{"ash", true}, NameRow{"csh", true},
                      NameRow{"tcsh", true}, NameRow{"rbash", true}, NameRow{"yash", true},
                      NameRow{"posh", true}, NameRow{"/bin/sh", true}, NameRow{"BASH", true},
                      NameRow{"/usr/bin/zsh", true}, NameRow{"busybox", false},
                      NameRow{"toybox", false}, NameRow{"python3", false}, NameRow{"shell", false},
                      NameRow{"", false}, NameRow{"ssh", false}, NameRow{"sha256sum", false},
                      NameRow{"/bin/sh/", false}, NameRow{"bash5", true}, NameRow{"ksh93", true},
                      NameRow{"bash-static", true}, NameRow{"/usr/bin/mksh-static", true},
                      NameRow{"shasum", false}));

}  // namespace
}  // namespace sandrun::policy
