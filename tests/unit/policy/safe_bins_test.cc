// Safe bins (reference §5.6, §10; SPEC §6.3): the shipped profiles (profiles/safe-bins/
// default.json), the argv validator rule by rule, the whole usage check (bins, trusted dirs,
// profiles, interpreters), custom profile normalisation, and the loader's refusals.
#include "runner/policy/safe_bins.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace sandrun::policy {
namespace {

const std::map<std::string, SafeBinProfile>& Builtin() {
  static const auto* profiles = [] {
    auto r = LoadSafeBinProfiles(SANDRUN_TEST_PROFILES_DIR);
    EXPECT_TRUE(r) << r.error().ToString();
    return new std::map<std::string, SafeBinProfile>(r ? *r
                                                       : std::map<std::string, SafeBinProfile>());
  }();
  return *profiles;
}

// ---- the shipped file -------------------------------------------------------------------------

TEST(SafeBinProfilesFileTest, HasTheBuiltinBinsAndNoJq) {
  std::vector<std::string> names;
  for (const auto& [name, p] : Builtin()) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"cut", "grep", "head", "sort", "tail", "tr", "uniq", "wc"}));
  EXPECT_EQ(Builtin().count("jq"), 0u);
}

TEST(SafeBinProfilesFileTest, KeepsOpenClawLimitsAndFlags) {
  const auto& b = Builtin();
  for (const char* name : {"cut", "grep", "head", "sort", "tail", "uniq", "wc"}) {
    EXPECT_EQ(b.at(name).min_positional, 0) << name;
    EXPECT_EQ(b.at(name).max_positional, 0) << name;
  }
  EXPECT_EQ(b.at("tr").min_positional, 1);
  EXPECT_EQ(b.at("tr").max_positional, 2);
  EXPECT_EQ(b.at("wc").denied_flags, std::vector<std::string>{"--files0-from"});
  EXPECT_EQ(b.at("head").allowed_value_flags,
            (std::vector<std::string>{"--lines", "--bytes", "-n", "-c"}));
  EXPECT_EQ(b.at("sort").denied_flags,
            (std::vector<std::string>{"--compress-program", "--files0-from", "--output",
                                      "--random-source", "--temporary-directory", "-T", "-o"}));
  EXPECT_EQ(b.at("grep").denied_flags,
            (std::vector<std::string>{"--file", "--exclude-from", "--dereference-recursive",
                                      "--directories", "--recursive", "-f", "-d", "-r", "-R"}));
  EXPECT_EQ(b.at("tail").denied_flags,
            (std::vector<std::string>{"--follow", "--retry", "-f", "-F"}));
  EXPECT_TRUE(b.at("tr").allowed_value_flags.empty());
}

TEST(SafeBinProfilesFileTest, DefaultsAreOpenClaws) {
  EXPECT_EQ(DefaultSafeBins(),
            (std::vector<std::string>{"cut", "uniq", "head", "tail", "tr", "wc"}));
  EXPECT_EQ(DefaultSafeBinTrustedDirs(), (std::vector<std::string>{"/bin", "/usr/bin"}));
}

// ---- ValidateSafeBinArgv with the built-in profiles -------------------------------------------

struct ArgvRow {
  std::string bin;
  std::vector<std::string> args;  // without argv[0]
  bool ok;
  std::string reason_part = "";  // a substring of the reason when refused
};

void PrintTo(const ArgvRow& r, std::ostream* os) {
  *os << r.bin;
  for (const auto& a : r.args) *os << " '" << a << "'";
  *os << (r.ok ? " -> ok" : " -> refused");
}

class BuiltinArgvTest : public ::testing::TestWithParam<ArgvRow> {};

TEST_P(BuiltinArgvTest, Validates) {
  const ArgvRow& row = GetParam();
  ASSERT_EQ(Builtin().count(row.bin), 1u) << row.bin;
  std::string reason = ValidateSafeBinArgv(row.args, Builtin().at(row.bin), row.bin);
  if (row.ok) {
    EXPECT_EQ(reason, "");
  } else {
    EXPECT_NE(reason, "");
    EXPECT_NE(reason.find(row.reason_part), std::string::npos) << reason;
  }
}

// Reference §10: what current OpenClaw allows and refuses, with SPEC §6.3's difference (sort -n).
INSTANTIATE_TEST_SUITE_P(
    Reference10, BuiltinArgvTest,
    ::testing::Values(ArgvRow{"wc", {"-l"}, true}, ArgvRow{"uniq", {"-c"}, true},
                      ArgvRow{"head", {"-q"}, true}, ArgvRow{"wc", {"--lines"}, true},
                      ArgvRow{"sort", {"-n"}, true},  // SPEC §6.3 differs from OpenClaw here
                      ArgvRow{"head", {"-5"}, false, "unknown flag \"-5\""},
                      ArgvRow{"tr", {"-S", "a", "b"}, false, "unknown flag \"-S\""},
                      ArgvRow{"tail", {"-f"}, false, "\"-f\" is denied"}));

INSTANTIATE_TEST_SUITE_P(
    Wc, BuiltinArgvTest,
    ::testing::Values(
        ArgvRow{"wc", {}, true}, ArgvRow{"wc", {"-w"}, true}, ArgvRow{"wc", {"-c"}, true},
        ArgvRow{"wc", {"-m"}, true}, ArgvRow{"wc", {"-L"}, true}, ArgvRow{"wc", {"-lwc"}, true},
        ArgvRow{"wc", {"-l", "-w"}, true}, ArgvRow{"wc", {"--words"}, true},
        ArgvRow{"wc", {"--bytes"}, true}, ArgvRow{"wc", {"--chars"}, true},
        ArgvRow{"wc", {"--max-line-length"}, true}, ArgvRow{"wc", {"--li"}, true},
        ArgvRow{"wc", {"--max"}, true}, ArgvRow{"wc", {"-"}, true},
        ArgvRow{"wc", {"", "-l", ""}, true}, ArgvRow{"wc", {"-l", "--"}, true},
        ArgvRow{"wc", {"--", "-"}, true},
        ArgvRow{"wc", {"file.txt"}, false, "too many positional arguments (1, at most 0)"},
        ArgvRow{"wc", {"-l", "/etc/passwd"}, false, "looks like a path"},
        ArgvRow{"wc", {"--files0-from=list"}, false, "\"--files0-from\" is denied"},
        ArgvRow{"wc", {"--files0-from", "list"}, false, "is denied"},
        ArgvRow{"wc", {"--files"}, false, "\"--files0-from\" is denied"},
        ArgvRow{"wc", {"--lines=5"}, false, "takes no value"},
        ArgvRow{"wc", {"--l"}, true},  // 3 characters: the shortest prefix
        ArgvRow{"wc", {"--"}, true}, ArgvRow{"wc", {"--total=never"}, false, "unknown flag"},
        ArgvRow{"wc", {"--help"}, false, "unknown flag \"--help\""},
        ArgvRow{"wc", {"-lx"}, false, "unknown flag \"-x\" in \"-lx\""},
        ArgvRow{"wc", {"-l=1"}, false, "unknown flag \"-=\""},
        ArgvRow{"wc", {"--", "x"}, false, "too many positional"},
        ArgvRow{"wc", {"-", "x"}, false, "too many positional"}));

INSTANTIATE_TEST_SUITE_P(
    Head, BuiltinArgvTest,
    ::testing::Values(ArgvRow{"head", {"-n", "5"}, true}, ArgvRow{"head", {"-n5"}, true},
                      ArgvRow{"head", {"-n", "-5"}, true},  // a negative count is a literal value
                      ArgvRow{"head", {"-c", "100"}, true}, ArgvRow{"head", {"--lines", "5"}, true},
                      ArgvRow{"head", {"--lines=5"}, true}, ArgvRow{"head", {"--bytes=1K"}, true},
                      ArgvRow{"head", {"--li=5"}, true}, ArgvRow{"head", {"-qn", "3"}, true},
                      ArgvRow{"head", {"-qn3"}, true}, ArgvRow{"head", {"-v"}, true},
                      ArgvRow{"head", {"-z"}, true}, ArgvRow{"head", {"--quiet"}, true},
                      ArgvRow{"head", {"--silent"}, true}, ArgvRow{"head", {"--verbose"}, true},
                      ArgvRow{"head", {"--zero-terminated"}, true},
                      ArgvRow{"head", {"-n"}, false, "\"-n\" needs a value"},
                      ArgvRow{"head", {"--lines"}, false, "\"--lines\" needs a value"},
                      ArgvRow{"head", {"--lines="}, false, "needs a value"},
                      ArgvRow{"head", {"-n", ""}, false, "needs a value"},
                      ArgvRow{"head", {"-n", "*"}, false, "glob character"},
                      ArgvRow{"head", {"-n", "/etc/passwd"}, false, "looks like a path"},
                      ArgvRow{"head", {"--lines=~/x"}, false, "looks like a path"},
                      ArgvRow{"head", {"-n5", "file"}, false, "too many positional"},
                      ArgvRow{"head", {"-5"}, false, "unknown flag"},
                      ArgvRow{"head", {"-n", "5", "x"}, false, "too many positional"},
                      ArgvRow{"head", {"--version"}, false, "unknown flag"},
                      ArgvRow{"head", {"--v"}, true},  // only --verbose among the known flags
                      ArgvRow{"head", {"--q=1"}, false, "takes no value"},
                      ArgvRow{"head", {"-qx"}, false, "unknown flag \"-x\""}));

INSTANTIATE_TEST_SUITE_P(
    Tail, BuiltinArgvTest,
    ::testing::Values(
        ArgvRow{"tail", {"-n", "5"}, true}, ArgvRow{"tail", {"-n", "+5"}, true},
        ArgvRow{"tail", {"-c5"}, true}, ArgvRow{"tail", {"-q"}, true},
        ArgvRow{"tail", {"-v"}, true}, ArgvRow{"tail", {"-z"}, true},
        ArgvRow{"tail", {"--pid=1"}, true}, ArgvRow{"tail", {"--sleep-interval", "1"}, true},
        ArgvRow{"tail", {"--max-unchanged-stats=3"}, true},
        ArgvRow{"tail", {"-F"}, false, "\"-F\" is denied"},
        ArgvRow{"tail", {"-qf"}, false, "\"-f\" is denied"},
        ArgvRow{"tail", {"-n5f"}, true},  // "5f" is -n's value
        ArgvRow{"tail", {"--follow"}, false, "\"--follow\" is denied"},
        ArgvRow{"tail", {"--follow=name"}, false, "is denied"},
        ArgvRow{"tail", {"--fo"}, false, "\"--follow\" is denied"},
        ArgvRow{"tail", {"--retry"}, false, "is denied"},
        ArgvRow{"tail", {"--s"}, false, "ambiguous flag"},  // --sleep-interval, --silent
        ArgvRow{"tail", {"--si"}, true}, ArgvRow{"tail", {"+5"}, false, "too many positional"},
        ArgvRow{"tail", {"-s", "1"}, false, "unknown flag \"-s\""}));

INSTANTIATE_TEST_SUITE_P(
    Sort, BuiltinArgvTest,
    ::testing::Values(
        ArgvRow{"sort", {"-r"}, true}, ArgvRow{"sort", {"-u"}, true}, ArgvRow{"sort", {"-f"}, true},
        ArgvRow{"sort", {"-nru"}, true},
        ArgvRow{"sort", {"-b", "-h", "-s", "-z", "-V", "-M", "-g"}, true},
        ArgvRow{"sort", {"-k", "2"}, true}, ArgvRow{"sort", {"-k2,2n"}, true},
        ArgvRow{"sort", {"-t", ",", "-k", "1"}, true}, ArgvRow{"sort", {"-nt,"}, true},
        ArgvRow{"sort", {"--key=2"}, true}, ArgvRow{"sort", {"--numeric-sort"}, true},
        ArgvRow{"sort", {"--reverse", "--unique"}, true}, ArgvRow{"sort", {"--rev"}, true},
        ArgvRow{"sort", {"--parallel=2"}, true}, ArgvRow{"sort", {"-S", "10M"}, true},
        ArgvRow{"sort", {"-o", "out"}, false, "\"-o\" is denied"},
        ArgvRow{"sort", {"-no", "out"}, false, "\"-o\" is denied"},
        ArgvRow{"sort", {"-T", "dir"}, false, "is denied"},
        ArgvRow{"sort", {"--output=out"}, false, "\"--output\" is denied"},
        ArgvRow{"sort", {"--out=x"}, false, "\"--output\" is denied"},
        ArgvRow{"sort", {"--compress-program=gzip"}, false, "is denied"},
        ArgvRow{"sort", {"--compress"}, false, "is denied"},
        ArgvRow{"sort", {"--random-source=/dev/zero"}, false, "is denied"},
        ArgvRow{"sort", {"--files0-from=x"}, false, "is denied"},
        ArgvRow{"sort", {"--temporary-directory=x"}, false, "is denied"},
        ArgvRow{"sort", {"--r"}, false, "ambiguous flag"},  // --reverse, --random-source
        ArgvRow{"sort", {"--sort=random"}, false, "unknown flag"},
        ArgvRow{"sort", {"-R"}, false, "unknown flag"},
        ArgvRow{"sort", {"-m"}, false, "unknown flag"},
        ArgvRow{"sort", {"-c"}, false, "unknown flag"},
        ArgvRow{"sort", {"-k", "1*"}, false, "glob character"},
        ArgvRow{"sort", {"--debug"}, false, "unknown flag"},
        ArgvRow{"sort", {"file"}, false, "too many positional"}));

INSTANTIATE_TEST_SUITE_P(
    Uniq, BuiltinArgvTest,
    ::testing::Values(ArgvRow{"uniq", {"-d"}, true}, ArgvRow{"uniq", {"-u"}, true},
                      ArgvRow{"uniq", {"-i"}, true}, ArgvRow{"uniq", {"-z"}, true},
                      ArgvRow{"uniq", {"-D"}, true}, ArgvRow{"uniq", {"-ci"}, true},
                      ArgvRow{"uniq", {"--count"}, true}, ArgvRow{"uniq", {"--repeated"}, true},
                      ArgvRow{"uniq", {"--unique"}, true}, ArgvRow{"uniq", {"--ignore-case"}, true},
                      ArgvRow{"uniq", {"--all-repeated"}, true}, ArgvRow{"uniq", {"--group"}, true},
                      ArgvRow{"uniq", {"-f", "1"}, true}, ArgvRow{"uniq", {"-s2"}, true},
                      ArgvRow{"uniq", {"-cw", "3"}, true},
                      ArgvRow{"uniq", {"--skip-fields=1"}, true},
                      ArgvRow{"uniq", {"--check-chars", "4"}, true},
                      ArgvRow{"uniq", {"--group", "secret.txt"}, false, "too many positional"},
                      ArgvRow{"uniq", {"--group=prepend"}, false, "takes no value"},
                      ArgvRow{"uniq", {"--c"}, false, "ambiguous flag"},  // --count, --check-chars
                      ArgvRow{"uniq", {"--s"}, false, "ambiguous flag"},
                      ArgvRow{"uniq", {"in", "out"}, false, "too many positional"},
                      ArgvRow{"uniq", {"-f"}, false, "needs a value"}));

INSTANTIATE_TEST_SUITE_P(
    Cut, BuiltinArgvTest,
    ::testing::Values(ArgvRow{"cut", {"-d", ",", "-f", "1"}, true},
                      ArgvRow{"cut", {"-d,", "-f1,3"}, true}, ArgvRow{"cut", {"-c", "1-5"}, true},
                      ArgvRow{"cut", {"-b1-5"}, true}, ArgvRow{"cut", {"-sd", ":", "-f1"}, true},
                      ArgvRow{"cut", {"-z", "-f2"}, true},
                      ArgvRow{"cut", {"--complement", "-f1"}, true},
                      ArgvRow{"cut", {"--only-delimited", "-f1"}, true},
                      ArgvRow{"cut", {"--fields=1", "--delimiter=:"}, true},
                      ArgvRow{"cut", {"--output-delimiter", "|", "-f1"}, true},
                      ArgvRow{"cut", {"-d", "-", "-f1"}, true},  // "-" as a value
                      ArgvRow{"cut", {"-f", "1", "file.csv"}, false, "too many positional"},
                      ArgvRow{"cut", {"-n"}, false, "unknown flag"},
                      ArgvRow{"cut", {"-d", "["}, false, "glob character"},
                      ArgvRow{"cut", {"--delimiter"}, false, "needs a value"}));

INSTANTIATE_TEST_SUITE_P(
    Tr, BuiltinArgvTest,
    ::testing::Values(
        ArgvRow{"tr", {"a", "b"}, true}, ArgvRow{"tr", {"-d", "a"}, true},
        ArgvRow{"tr", {"-s", " "}, true}, ArgvRow{"tr", {"-c", "a", "b"}, true},
        ArgvRow{"tr", {"-C", "a", "b"}, true}, ArgvRow{"tr", {"-t", "abc", "x"}, true},
        ArgvRow{"tr", {"-cd", "a"}, true}, ArgvRow{"tr", {"--delete", "x"}, true},
        ArgvRow{"tr", {"--squeeze-repeats", "x"}, true},
        ArgvRow{"tr", {"--complement", "a", "b"}, true},
        ArgvRow{"tr", {"--truncate-set1", "ab", "x"}, true},
        ArgvRow{"tr", {"--", "-a", "b"}, true},  // after "--" "-a" is an operand
        ArgvRow{"tr", {"A-Z", "a-z"}, true}, ArgvRow{"tr", {".", "x"}, true},
        ArgvRow{"tr", {}, false, "too few positional arguments (0, at least 1)"},
        ArgvRow{"tr", {"-d"}, false, "too few positional"},
        ArgvRow{"tr", {"a", "b", "c"}, false, "too many positional arguments (3, at most 2)"},
        ArgvRow{"tr", {"[:upper:]", "[:lower:]"}, false, "glob character"},
        ArgvRow{"tr", {"a*", "b"}, false, "glob character"},
        ArgvRow{"tr", {"?", "b"}, false, "glob character"},
        ArgvRow{"tr", {"./a", "b"}, false, "looks like a path"},
        ArgvRow{"tr", {"../a", "b"}, false, "looks like a path"},
        ArgvRow{"tr", {"~", "b"}, false, "looks like a path"},
        ArgvRow{"tr", {"/", "b"}, false, "looks like a path"},
        ArgvRow{"tr", {" /x", "b"}, false, "looks like a path"},
        ArgvRow{"tr", {"C:\\x", "b"}, false, "looks like a path"},
        ArgvRow{"tr", {"c:/x", "b"}, false, "looks like a path"},
        ArgvRow{"tr", {"--", "a*", "b"}, false, "glob character"},
        ArgvRow{"tr", {"-S", "a", "b"}, false, "unknown flag"},
        ArgvRow{"tr", {"-x", "a"}, false, "unknown flag"},
        ArgvRow{"tr", {"--delete=a"}, false, "takes no value"}));

INSTANTIATE_TEST_SUITE_P(
    Grep, BuiltinArgvTest,
    ::testing::Values(
        ArgvRow{"grep", {"-e", "foo"}, true}, ArgvRow{"grep", {"-efoo"}, true},
        ArgvRow{"grep", {"-ie", "foo"}, true}, ArgvRow{"grep", {"-v", "-e", "x"}, true},
        ArgvRow{"grep", {"-cnowx", "-e", "x"}, true}, ArgvRow{"grep", {"-F", "-e", "a.b"}, true},
        ArgvRow{"grep", {"-E", "-e", "a|b"}, true}, ArgvRow{"grep", {"--regexp=foo"}, true},
        ArgvRow{"grep", {"--regexp", "foo"}, true}, ArgvRow{"grep", {"--reg=foo"}, true},
        ArgvRow{"grep", {"-m", "1", "-e", "x"}, true},
        ArgvRow{"grep", {"-A", "2", "-B1", "-C", "3", "-e", "x"}, true},
        ArgvRow{"grep", {"--max-count=2", "-e", "x"}, true},
        ArgvRow{"grep", {"--ignore-case", "--invert-match", "-e", "x"}, true},
        ArgvRow{"grep", {"--label=stdin", "-H", "-e", "x"}, true},
        ArgvRow{"grep", {"-q", "-s", "-e", "x"}, true},
        ArgvRow{"grep", {"foo"}, false, "too many positional"},
        ArgvRow{"grep", {"-e", "foo", "file"}, false, "too many positional"},
        ArgvRow{"grep", {"-e", "a.*b"}, false, "glob character"},
        ArgvRow{"grep", {"-f", "patterns"}, false, "\"-f\" is denied"},
        ArgvRow{"grep", {"-r", "-e", "x"}, false, "\"-r\" is denied"},
        ArgvRow{"grep", {"-R", "-e", "x"}, false, "\"-R\" is denied"},
        ArgvRow{"grep", {"-ir", "-e", "x"}, false, "\"-r\" is denied"},
        ArgvRow{"grep", {"-d", "recurse", "-e", "x"}, false, "\"-d\" is denied"},
        ArgvRow{"grep", {"--recursive", "-e", "x"}, false, "is denied"},
        ArgvRow{"grep", {"--file=p"}, false, "\"--file\" is denied"},
        ArgvRow{"grep", {"--exclude-from=x", "-e", "x"}, false, "is denied"},
        ArgvRow{"grep", {"--directories=recurse", "-e", "x"}, false, "is denied"},
        ArgvRow{"grep", {"--dereference-recursive", "-e", "x"}, false, "is denied"},
        ArgvRow{"grep", {"--exclude-dir=x", "-e", "x"}, false, "unknown flag"},
        ArgvRow{"grep", {"-P", "-e", "x"}, false, "unknown flag \"-P\""},
        ArgvRow{"grep", {"-5", "-e", "x"}, false, "unknown flag \"-5\""},
        ArgvRow{"grep", {"--line", "-e", "x"}, false, "ambiguous flag"},
        ArgvRow{"grep", {"--color=always", "-e", "x"}, false, "unknown flag"},
        ArgvRow{"grep", {"--count=1", "-e", "x"}, false, "takes no value"},
        ArgvRow{"grep", {"-e"}, false, "needs a value"},
        ArgvRow{"grep", {"-e", "/etc"}, false, "looks like a path"}));

// ---- ValidateSafeBinArgv rule by rule with a synthetic profile --------------------------------

SafeBinProfile Synthetic() {
  SafeBinProfile p;
  p.min_positional = 1;
  p.max_positional = 3;
  p.allowed_value_flags = {"-o", "--option", "--optimize"};
  p.allowed_flags = {"-a", "-b", "--alpha", "--all"};
  p.denied_flags = {"-x", "--exec", "--execute-all"};
  return p;
}

class RulesTest : public ::testing::TestWithParam<ArgvRow> {};

TEST_P(RulesTest, Validates) {
  const ArgvRow& row = GetParam();
  std::string reason = ValidateSafeBinArgv(row.args, Synthetic(), row.bin);
  if (row.ok) {
    EXPECT_EQ(reason, "");
  } else {
    EXPECT_NE(reason.find(row.reason_part), std::string::npos) << "reason: " << reason;
    EXPECT_NE(reason, "");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rules, RulesTest,
    ::testing::Values(
        // Empty tokens and "-" are skipped (not positional).
        ArgvRow{"t", {"p"}, true}, ArgvRow{"t", {"", "p", ""}, true},
        ArgvRow{"t", {"-", "p"}, true}, ArgvRow{"t", {"-", ""}, false, "too few"},
        // "--": the rest is positional, "-" and "" still skipped, flags no longer parsed.
        ArgvRow{"t", {"--", "-x"}, true}, ArgvRow{"t", {"--", "--exec"}, true},
        ArgvRow{"t", {"--", "-", "p"}, true}, ArgvRow{"t", {"--"}, false, "too few"},
        ArgvRow{"t", {"--", "a", "b", "c", "d"}, false, "too many"},
        ArgvRow{"t", {"--", "--"}, true},  // the second "--" is an operand
        ArgvRow{"t", {"--", "/etc"}, false, "looks like a path"},
        // Positional limits.
        ArgvRow{"t", {}, false, "too few positional arguments (0, at least 1)"},
        ArgvRow{"t", {"a", "b", "c"}, true},
        ArgvRow{"t", {"a", "b", "c", "d"}, false, "too many positional arguments (4, at most 3)"},
        // Safe literals.
        ArgvRow{"t", {"a-b"}, true}, ArgvRow{"t", {"a/b"}, true},  // relative, not ./-prefixed
        ArgvRow{"t", {"."}, true}, ArgvRow{"t", {".."}, true}, ArgvRow{"t", {"a~"}, true},
        ArgvRow{"t", {"$HOME"}, true},  // the rewritten command quotes it: no expansion
        ArgvRow{"t", {"*"}, false, "glob"}, ArgvRow{"t", {"a?"}, false, "glob"},
        ArgvRow{"t", {"[a"}, false, "glob"}, ArgvRow{"t", {"a]"}, false, "glob"},
        ArgvRow{"t", {"./a"}, false, "path"}, ArgvRow{"t", {"../a"}, false, "path"},
        ArgvRow{"t", {"~"}, false, "path"}, ArgvRow{"t", {"~root"}, false, "path"},
        ArgvRow{"t", {"/"}, false, "path"}, ArgvRow{"t", {"Z:\\"}, false, "path"},
        ArgvRow{"t", {"Z:"}, true}, ArgvRow{"t", {"1:\\"}, true},
        // Long flags: exact, prefix >= 3 characters, ambiguity, denied, values.
        ArgvRow{"t", {"--alpha", "p"}, true}, ArgvRow{"t", {"--alp", "p"}, true},
        ArgvRow{"t", {"--al", "p"}, false, "ambiguous flag \"--al\""},  // --alpha, --all
        ArgvRow{"t", {"--all", "p"}, true},  // exact beats being a prefix of nothing else
        ArgvRow{"t", {"--a", "p"}, false, "ambiguous"}, ArgvRow{"t", {"--", "p"}, true},
        ArgvRow{"t", {"--e", "p"}, false, "ambiguous"},  // --exec, --execute-all: both denied
        ArgvRow{"t", {"--exec", "p"}, false, "\"--exec\" is denied"},  // exact beats prefix
        ArgvRow{"t", {"--exe", "p"}, false, "ambiguous"},
        ArgvRow{"t", {"--execute", "p"}, false, "\"--execute-all\" is denied"},
        ArgvRow{"t", {"--exec=1", "p"}, false, "is denied"},
        ArgvRow{"t", {"--zzz", "p"}, false, "unknown flag \"--zzz\""},
        ArgvRow{"t", {"--alphabet", "p"}, false, "unknown flag"},  // longer than any flag
        ArgvRow{"t", {"--alpha=1", "p"}, false, "\"--alpha\" takes no value"},
        ArgvRow{"t", {"--alpha=", "p"}, false, "takes no value"},
        ArgvRow{"t", {"--option", "v", "p"}, true}, ArgvRow{"t", {"--option=v", "p"}, true},
        ArgvRow{"t", {"--opti=v", "p"}, false, "ambiguous"},  // --option, --optimize
        ArgvRow{"t", {"--optio", "v", "p"}, true}, ArgvRow{"t", {"--optim=2", "p"}, true},
        ArgvRow{"t", {"--option", "p"}, false, "too few"},  // "p" was the value
        ArgvRow{"t", {"p", "--option"}, false, "\"--option\" needs a value"},
        ArgvRow{"t", {"--option=", "p"}, false, "needs a value"},
        ArgvRow{"t", {"--option=*", "p"}, false, "value of --option \"*\" has a glob"},
        ArgvRow{"t", {"--option", "/x", "p"}, false, "value of --option \"/x\" looks like a path"},
        ArgvRow{"t", {"--option", "--exec", "p"}, true},  // a value, as getopt reads it
        ArgvRow{"t", {"--=x", "p"}, false, "unknown flag"},
        // Short clusters.
        ArgvRow{"t", {"-a", "p"}, true}, ArgvRow{"t", {"-ab", "p"}, true},
        ArgvRow{"t", {"-aab", "p"}, true}, ArgvRow{"t", {"-ax", "p"}, false, "\"-x\" is denied"},
        ArgvRow{"t", {"-xa", "p"}, false, "\"-x\" is denied"},
        ArgvRow{"t", {"-ac", "p"}, false, "unknown flag \"-c\" in \"-ac\""},
        ArgvRow{"t", {"-c", "p"}, false, "unknown flag \"-c\""},
        ArgvRow{"t", {"-o", "v", "p"}, true}, ArgvRow{"t", {"-ov", "p"}, true},
        ArgvRow{"t", {"-aov", "p"}, true},
        ArgvRow{"t", {"-aox", "p"}, true},  // "x" is -o's value, not the denied flag
        ArgvRow{"t", {"-oa", "p"}, true}, ArgvRow{"t", {"-o*", "p"}, false, "glob"},
        ArgvRow{"t", {"-o/x", "p"}, false, "looks like a path"},
        ArgvRow{"t", {"-o", "p"}, false, "too few"}, ArgvRow{"t", {"p", "-o"}, false, "needs"},
        ArgvRow{"t", {"-ao"}, false, "needs a value"},
        ArgvRow{"t", {"-1", "p"}, false, "unknown flag \"-1\""},
        ArgvRow{"t", {"-12", "p"}, false, "unknown flag"},
        ArgvRow{"t", {"-A", "p"}, false, "unknown flag \"-A\""},  // case-sensitive
        // Semantic rules: these bins are refused whatever their profile says.
        ArgvRow{"sed", {"p"}, false, "sed is never a safe bin"},
        ArgvRow{"gsed", {"p"}, false, "never a safe bin"},
        ArgvRow{"awk", {"p"}, false, "awk is never a safe bin"},
        ArgvRow{"gawk", {"p"}, false, "never"}, ArgvRow{"mawk", {"p"}, false, "never"},
        ArgvRow{"nawk", {"p"}, false, "never"}, ArgvRow{"jq", {"p"}, false, "jq is never"},
        ArgvRow{"JQ", {"p"}, false, "jq is never"},
        ArgvRow{"/usr/bin/sed", {"p"}, false, "sed is never"}, ArgvRow{"sedx", {"p"}, true}));

TEST(ValidateSafeBinArgvTest, ADuplicatedFlagTakesTheStrictestReading) {
  SafeBinProfile p;
  p.max_positional = 0;
  p.allowed_value_flags = {"-n", "--num"};
  p.allowed_flags = {"-n", "--num"};
  // Read as boolean: the next token is an argument (counted), not a value.
  EXPECT_NE(ValidateSafeBinArgv({"-n", "5"}, p, "t"), "");
  EXPECT_NE(ValidateSafeBinArgv({"--num", "5"}, p, "t"), "");
  p.denied_flags = {"-n", "--num"};
  EXPECT_NE(ValidateSafeBinArgv({"-n"}, p, "t").find("denied"), std::string::npos);
  EXPECT_NE(ValidateSafeBinArgv({"--nu"}, p, "t").find("denied"), std::string::npos);
}

TEST(ValidateSafeBinArgvTest, NoMaxMeansUnlimited) {
  SafeBinProfile p;
  std::vector<std::string> many(500, "x");
  EXPECT_EQ(ValidateSafeBinArgv(many, p, "t"), "");
}

TEST(ValidateSafeBinArgvTest, CostGrowsLinearlyWithTheArguments) {
  // Relative, not absolute (CI machines are noisy): 7 grep arguments against 1 wc flag in the
  // same run; a per-argument scan of the flag lists keeps this within a small factor.
  const SafeBinProfile& grep = Builtin().at("grep");
  const SafeBinProfile& wc = Builtin().at("wc");
  std::vector<std::string> args = {"-i", "-n", "--max-count=5", "-e", "needle", "-C", "2"};
  std::vector<std::string> one = {"-l"};
  auto seconds = [](const std::vector<std::string>& a, const SafeBinProfile& p, const char* bin) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 20000; ++i) EXPECT_EQ(ValidateSafeBinArgv(a, p, bin), "");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double base = seconds(one, wc, "wc");
  const double seven = seconds(args, grep, "grep");
  EXPECT_LT(seven, 60 * base + 0.01) << seven << " s vs " << base << " s";
}

// ---- CheckSafeBinUsage ------------------------------------------------------------------------

struct UsageRow {
  std::string name;
  std::string resolved_path;
  std::vector<std::string> argv;
  bool ok;
  std::string reason_part = "";
};

void PrintTo(const UsageRow& r, std::ostream* os) { *os << r.name; }

SafeBinSettings Settings() {
  std::map<std::string, CustomSafeBinProfile> custom;
  CustomSafeBinProfile cat;
  cat.max_positional = 0;
  custom["cat"] = cat;
  CustomSafeBinProfile python;
  custom["python3"] = python;
  CustomSafeBinProfile jq;
  custom["jq"] = jq;
  CustomSafeBinProfile bash;
  custom["bash"] = bash;
  CustomSafeBinProfile awk;
  custom["awk"] = awk;
  return MakeSafeBinSettings(
      std::vector<std::string>{"cut", "uniq", "head", "tail", "tr", "wc", "sort", "grep", "cat",
                               "python3", "jq", "bash", "awk", "nl", " WcX "},
      {"/opt/tools/bin/", "relative/dir"}, Builtin(), custom);
}

class UsageTest : public ::testing::TestWithParam<UsageRow> {};

TEST_P(UsageTest, Checks) {
  const UsageRow& row = GetParam();
  SafeBinVerdict v = CheckSafeBinUsage(Settings(), row.resolved_path, row.argv);
  EXPECT_EQ(v.ok, row.ok) << v.reason;
  if (row.ok) {
    EXPECT_EQ(v.reason, "");
  } else {
    EXPECT_NE(v.reason.find(row.reason_part), std::string::npos) << v.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, UsageTest,
    ::testing::Values(
        UsageRow{"wc_l", "/usr/bin/wc", {"wc", "-l"}, true},
        UsageRow{"wc_in_bin", "/bin/wc", {"wc", "-l"}, true},
        UsageRow{"argv0_is_not_used", "/usr/bin/wc", {"/some/where/else", "-l"}, true},
        UsageRow{"sort_n", "/usr/bin/sort", {"sort", "-n"}, true},
        UsageRow{"extra_trusted_dir", "/opt/tools/bin/wc", {"wc"}, true},
        UsageRow{"custom_profile", "/usr/bin/cat", {"cat"}, true},
        UsageRow{"custom_profile_limits", "/usr/bin/cat", {"cat", "x"}, false, "too many"},
        UsageRow{"name_lowercased", "/usr/bin/WC", {"WC", "-l"}, true},
        UsageRow{"empty_argv", "/usr/bin/wc", {}, true},
        UsageRow{"bad_args", "/usr/bin/wc", {"wc", "file"}, false, "wc: too many positional"},
        UsageRow{"untrusted_dir", "/usr/local/bin/wc", {"wc"}, false, "not in a trusted"},
        UsageRow{"home_dir", "/home/u/bin/wc", {"wc"}, false, "not in a trusted"},
        UsageRow{"subdir_of_trusted", "/usr/bin/x/wc", {"wc"}, false, "not in a trusted"},
        UsageRow{"parent_of_trusted", "/usr/wc", {"wc"}, false, "not in a trusted"},
        UsageRow{"relative_dir_not_trusted", "/work/relative/dir/wc", {"wc"}, false, "trusted"},
        UsageRow{"root_dir", "/wc", {"wc"}, false, "not in a trusted"},
        UsageRow{"not_listed", "/usr/bin/nl2", {"nl2"}, false, "nl2 is not in safeBins"},
        UsageRow{"listed_unprofiled",
                 "/usr/bin/nl",
                 {"nl"},
                 false,
                 "nl has no safe-bin profile; use allowlist or define "
                 "tools.exec.safeBinProfiles.nl"},
        UsageRow{"listed_name_trimmed_lowercased",
                 "/usr/bin/wcx",
                 {"wcx"},
                 false,
                 "no safe-bin profile"},
        UsageRow{"jq_never", "/usr/bin/jq", {"jq", "."}, false, "jq is never a safe bin"},
        UsageRow{"interpreter_never", "/usr/bin/python3", {"python3"}, false, "interpreter"},
        UsageRow{"shell_never", "/usr/bin/bash", {"bash"}, false, "interpreter or a shell"},
        UsageRow{"awk_never", "/usr/bin/awk", {"awk"}, false, "never a safe bin"},
        UsageRow{
            "grep_not_in_defaults_but_listed", "/usr/bin/grep", {"grep", "-c", "-e", "x"}, true},
        UsageRow{"unresolved", "", {"wc"}, false, "no resolved absolute path"},
        UsageRow{"relative_resolved", "usr/bin/wc", {"wc"}, false, "no resolved absolute path"},
        UsageRow{"trailing_slash", "/usr/bin/", {"wc"}, false, "no executable name"}));

TEST(CheckSafeBinUsageTest, DefaultBinsExcludeSortAndGrep) {
  SafeBinSettings s = MakeSafeBinSettings(std::nullopt, {}, Builtin(), {});
  EXPECT_EQ(s.bins, DefaultSafeBins());
  EXPECT_TRUE(CheckSafeBinUsage(s, "/usr/bin/wc", {"wc", "-l"}).ok);
  EXPECT_FALSE(CheckSafeBinUsage(s, "/usr/bin/sort", {"sort"}).ok);
  EXPECT_FALSE(CheckSafeBinUsage(s, "/usr/bin/grep", {"grep", "-e", "x"}).ok);
}

TEST(CheckSafeBinUsageTest, EmptyListMeansNone) {
  SafeBinSettings s = MakeSafeBinSettings(std::vector<std::string>{}, {}, Builtin(), {});
  EXPECT_TRUE(s.bins.empty());
  EXPECT_FALSE(CheckSafeBinUsage(s, "/usr/bin/wc", {"wc"}).ok);
}

TEST(CheckSafeBinUsageTest, TrustedDirsWithTrailingSlashesSetByHand) {
  SafeBinSettings s;
  s.bins = {"wc"};
  s.trusted_dirs = {"/usr/bin///", "/"};
  s.profiles = Builtin();
  EXPECT_TRUE(CheckSafeBinUsage(s, "/usr/bin/wc", {"wc"}).ok);
  EXPECT_TRUE(CheckSafeBinUsage(s, "/wc", {"wc"}).ok);
  EXPECT_FALSE(CheckSafeBinUsage(s, "/bin/wc", {"wc"}).ok);
}

// ---- settings helpers -------------------------------------------------------------------------

TEST(SafeBinSettingsTest, NormalizesNames) {
  EXPECT_EQ(NormalizeSafeBinNames({" WC ", "wc", "", "  ", "Sort", "sort", "tr"}),
            (std::vector<std::string>{"wc", "sort", "tr"}));
}

struct DirRow {
  std::vector<std::string> extra;
  std::vector<std::string> dirs;
};

class TrustedDirsTest : public ::testing::TestWithParam<DirRow> {};

TEST_P(TrustedDirsTest, Resolves) {
  EXPECT_EQ(ResolveSafeBinTrustedDirs(GetParam().extra), GetParam().dirs);
}

INSTANTIATE_TEST_SUITE_P(
    Table, TrustedDirsTest,
    ::testing::Values(DirRow{{}, {"/bin", "/usr/bin"}},
                      DirRow{{"/opt/bin"}, {"/bin", "/usr/bin", "/opt/bin"}},
                      DirRow{{"/opt/bin/"}, {"/bin", "/usr/bin", "/opt/bin"}},
                      DirRow{{"//opt//bin//"}, {"/bin", "/usr/bin", "/opt/bin"}},
                      DirRow{{"/opt/./bin"}, {"/bin", "/usr/bin", "/opt/bin"}},
                      DirRow{{"/opt/x/../bin"}, {"/bin", "/usr/bin", "/opt/bin"}},
                      DirRow{{"/../../opt"}, {"/bin", "/usr/bin", "/opt"}},
                      DirRow{{" /opt/bin "}, {"/bin", "/usr/bin", "/opt/bin"}},
                      DirRow{{"/usr/bin/", "/bin"}, {"/bin", "/usr/bin"}},
                      DirRow{{"opt/bin", "./bin", "~/bin", ""}, {"/bin", "/usr/bin"}},
                      DirRow{{"/"}, {"/bin", "/usr/bin", "/"}},
                      DirRow{{"/a", "/a/", "/b"}, {"/bin", "/usr/bin", "/a", "/b"}}));

struct NormalizeRow {
  std::string name;
  CustomSafeBinProfile raw;
  SafeBinProfile expected;
};

void PrintTo(const NormalizeRow& r, std::ostream* os) { *os << r.name; }

class NormalizeTest : public ::testing::TestWithParam<NormalizeRow> {};

TEST_P(NormalizeTest, Normalizes) {
  EXPECT_EQ(NormalizeCustomProfile(GetParam().raw), GetParam().expected);
}

CustomSafeBinProfile Raw(std::optional<double> min, std::optional<double> max,
                         std::vector<std::string> value = {}, std::vector<std::string> flags = {},
                         std::vector<std::string> denied = {}) {
  return CustomSafeBinProfile{min, max, std::move(value), std::move(flags), std::move(denied)};
}

SafeBinProfile Norm(int64_t min, std::optional<int64_t> max, std::vector<std::string> value = {},
                    std::vector<std::string> flags = {}, std::vector<std::string> denied = {}) {
  return SafeBinProfile{min, max, std::move(value), std::move(flags), std::move(denied)};
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

INSTANTIATE_TEST_SUITE_P(
    Table, NormalizeTest,
    ::testing::Values(NormalizeRow{"empty", Raw({}, {}), Norm(0, {})},
                      NormalizeRow{"limits", Raw(1, 2), Norm(1, 2)},
                      NormalizeRow{"truncated", Raw(1.9, 2.7), Norm(1, 2)},
                      NormalizeRow{"negative_min_ignored", Raw(-1, 3), Norm(0, 3)},
                      NormalizeRow{"negative_max_ignored", Raw(1, -1), Norm(1, {})},
                      NormalizeRow{"small_negative_truncates_to_zero", Raw({}, -0.5), Norm(0, 0)},
                      NormalizeRow{"max_below_min", Raw(3, 1), Norm(3, 3)},
                      NormalizeRow{"max_zero_min_zero", Raw(0, 0), Norm(0, 0)},
                      NormalizeRow{"nan_ignored", Raw(kNan, kNan), Norm(0, {})},
                      NormalizeRow{"inf_ignored", Raw(kInf, kInf), Norm(0, {})},
                      NormalizeRow{"huge_clamped", Raw({}, 1e30),
                                   Norm(0, std::numeric_limits<int64_t>::max())},
                      NormalizeRow{"flags_trimmed_deduped_sorted",
                                   Raw({}, {}, {" -n", "--lines", "-n ", ""},
                                       {"-z", "-a", "-z", "  "}, {"--x", "-b", "--x"}),
                                   Norm(0, {}, {"--lines", "-n"}, {"-a", "-z"}, {"--x", "-b"})},
                      NormalizeRow{"flag_case_kept", Raw({}, {}, {}, {"-C", "-c"}),
                                   Norm(0, {}, {}, {"-C", "-c"})}));

TEST(MergeSafeBinProfilesTest, CustomOverridesBuiltinAndNamesAreLowercased) {
  std::map<std::string, CustomSafeBinProfile> custom;
  custom[" WC "] = Raw({}, 1, {}, {"-l"});
  custom["Rev"] = Raw({}, 0);
  custom[""] = Raw({}, 0);
  auto merged = MergeSafeBinProfiles(Builtin(), custom);
  EXPECT_EQ(merged.at("wc"), Norm(0, 1, {}, {"-l"}));  // replaced entirely: no denied flags left
  EXPECT_EQ(merged.at("rev"), Norm(0, 0));
  EXPECT_EQ(merged.count(""), 0u);
  EXPECT_EQ(merged.at("sort"), Builtin().at("sort"));
  EXPECT_EQ(merged.size(), Builtin().size() + 1);
}

// ---- the loader -------------------------------------------------------------------------------

struct BadFile {
  const char* label;
  std::string text;
  std::string expected;  // a substring of the error
};

void PrintTo(const BadFile& c, std::ostream* os) { *os << c.label; }

std::string File(const std::string& profiles) {
  return R"({"name": "t", "description": "test", "profiles": )" + profiles + "}";
}

TEST(SafeBinLoaderTest, ParsesEveryKey) {
  auto r = ParseSafeBinProfiles(
      File(R"({"rev": {"minPositional": 1, "maxPositional": 2, "allowedValueFlags": ["-n"],
                       "allowedFlags": ["-a", "--all"], "deniedFlags": ["--evil"]},
               "nl": {}})"),
      "/p/safe-bins/t.json", "t");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->at("rev"), Norm(1, 2, {"-n"}, {"-a", "--all"}, {"--evil"}));
  EXPECT_EQ(r->at("nl"), Norm(0, {}));
}

TEST(SafeBinLoaderTest, EmptyProfilesObjectIsFine) {
  auto r = ParseSafeBinProfiles(File("{}"), "/p/safe-bins/t.json", "t");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->empty());
}

class SafeBinLoaderBadTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(SafeBinLoaderBadTest, IsRefusedWithPathKeyAndReason) {
  auto r = ParseSafeBinProfiles(GetParam().text, "/p/safe-bins/t.json", "t");
  ASSERT_FALSE(r) << GetParam().label;
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().ToString().find("/p/safe-bins/t.json"), std::string::npos)
      << r.error().ToString();
  EXPECT_NE(r.error().ToString().find(GetParam().expected), std::string::npos)
      << r.error().ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Table, SafeBinLoaderBadTest,
    ::testing::Values(
        BadFile{"bad_json", "{", ""}, BadFile{"trailing_comma", File(R"({"wc": {},})"), ""},
        BadFile{"not_object", "[]", "expected a JSON object"},
        BadFile{"name_mismatch", R"({"name": "x", "description": "d", "profiles": {}})",
                "differs from the file name"},
        BadFile{"no_description", R"({"name": "t", "profiles": {}})", "description: required"},
        BadFile{"missing_profiles", R"({"name": "t", "description": "d"})", "profiles: required"},
        BadFile{"unknown_top_key", R"({"name": "t", "description": "d", "profiles": {}, "x": 1})",
                "x: unknown key"},
        BadFile{"profiles_not_object", File("[]"), "profiles: expected an object"},
        BadFile{"profile_not_object", File(R"({"wc": []})"), "profiles.wc: expected an object"},
        BadFile{"unknown_profile_key", File(R"({"wc": {"maxPositionals": 0}})"),
                "profiles.wc.maxPositionals: unknown key"},
        BadFile{"duplicate_bin", File(R"({"wc": {}, "wc": {}})"), "profiles.wc: duplicate key"},
        BadFile{"min_string", File(R"({"wc": {"minPositional": "1"}})"),
                "profiles.wc.minPositional: expected an integer"},
        BadFile{"min_negative", File(R"({"wc": {"minPositional": -1}})"),
                "profiles.wc.minPositional: must be between"},
        BadFile{"max_float", File(R"({"wc": {"maxPositional": 1.5}})"),
                "profiles.wc.maxPositional: expected an integer"},
        BadFile{"max_below_min", File(R"({"tr": {"minPositional": 2, "maxPositional": 1}})"),
                "profiles.tr.maxPositional: must not be below minPositional"},
        BadFile{"flags_not_array", File(R"({"wc": {"allowedFlags": "-l"}})"),
                "profiles.wc.allowedFlags: expected an array of strings"},
        BadFile{"flag_not_string", File(R"({"wc": {"allowedFlags": [1]}})"),
                "profiles.wc.allowedFlags[0]: expected a non-empty string"},
        BadFile{"flag_empty", File(R"({"wc": {"deniedFlags": [""]}})"),
                "profiles.wc.deniedFlags[0]"},
        BadFile{"flag_twice", File(R"({"wc": {"allowedFlags": ["-l", "-l"]}})"),
                "profiles.wc.allowedFlags[1]: \"-l\" is listed twice"},
        BadFile{"flag_in_two_lists",
                File(R"({"wc": {"allowedFlags": ["-l"], "deniedFlags": ["-l"]}})"),
                "profiles.wc.deniedFlags[0]: \"-l\" is also listed in allowedFlags"},
        BadFile{"flag_no_dash", File(R"({"wc": {"allowedFlags": ["l"]}})"), "is not a flag"},
        BadFile{"flag_short_cluster", File(R"({"wc": {"allowedFlags": ["-lw"]}})"),
                "is not a flag"},
        BadFile{"flag_with_value", File(R"({"wc": {"allowedValueFlags": ["--lines=5"]}})"),
                "is not a flag"},
        BadFile{"flag_double_dash", File(R"({"wc": {"allowedFlags": ["--"]}})"), "is not a flag"},
        BadFile{"flag_dash_dash_dash", File(R"({"wc": {"allowedFlags": ["-", "--x"]}})"),
                "allowedFlags[0]: \"-\" is not a flag"},
        BadFile{"flag_space", File(R"({"wc": {"allowedFlags": ["--a b"]}})"), "is not a flag"},
        BadFile{"bin_uppercase", File(R"({"WC": {}})"), "profiles.WC: not a bin name"},
        BadFile{"bin_path", File(R"({"/usr/bin/wc": {}})"), "not a bin name"},
        BadFile{"bin_empty", File(R"({"": {}})"), "not a bin name"},
        BadFile{"jq", File(R"({"jq": {"maxPositional": 1}})"), "profiles.jq: jq is never"},
        BadFile{"awk", File(R"({"awk": {}})"), "profiles.awk: interpreters and shells"},
        BadFile{"sed", File(R"({"sed": {}})"), "interpreters and shells"},
        BadFile{"python", File(R"({"python3.11": {}})"), "interpreters and shells"},
        BadFile{"xargs", File(R"({"xargs": {}})"), "interpreters and shells"},
        BadFile{"find", File(R"({"find": {}})"), "interpreters and shells"},
        BadFile{"shell", File(R"({"bash": {}})"), "interpreters and shells"}));

class TempProfilesDir {
 public:
  TempProfilesDir() {
    char tmpl[] = "/tmp/sandrun-safebins-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::filesystem::create_directories(dir_ + "/safe-bins");
  }
  ~TempProfilesDir() { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/safe-bins/" + name + ".json") << text;
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

TEST(SafeBinLoaderTest, MissingFileIsNamed) {
  TempProfilesDir tmp;
  auto r = LoadSafeBinProfiles(tmp.dir());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().ToString().find(tmp.dir() + "/safe-bins/default.json"), std::string::npos)
      << r.error().ToString();
}

TEST(SafeBinLoaderTest, MissingDirectoryIsAnError) {
  EXPECT_FALSE(LoadSafeBinProfiles("/nonexistent-profiles-dir"));
}

TEST(SafeBinLoaderTest, ReadsANamedFileAndChecksItsStem) {
  TempProfilesDir tmp;
  tmp.Write("strict", R"({"name": "strict", "description": "d", "profiles": {"wc": {}}})");
  tmp.Write("other", R"({"name": "strict", "description": "d", "profiles": {}})");
  auto ok = LoadSafeBinProfiles(tmp.dir(), "strict");
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->count("wc"), 1u);
  auto bad = LoadSafeBinProfiles(tmp.dir(), "other");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("differs from the file name"), std::string::npos);
  EXPECT_FALSE(LoadSafeBinProfiles(tmp.dir(), "../safe-bins/strict"));
}

TEST(SafeBinLoaderTest, BadJsonOnDiskNamesTheFile) {
  TempProfilesDir tmp;
  tmp.Write("default", R"({"name": "default", "description": "d", "profiles": {"wc": {)");
  auto r = LoadSafeBinProfiles(tmp.dir());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().ToString().find("default.json"), std::string::npos) << r.error().ToString();
}

}  // namespace
}  // namespace sandrun::policy
