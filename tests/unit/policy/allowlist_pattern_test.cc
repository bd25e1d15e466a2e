// Allowlist pattern matching (reference §5.4, SPEC §6.2): the glob rules, "~" expansion, and
// which kind of pattern applies to which segment. Tables, plus a randomized comparison of the
// two-pointer matcher with a brute-force reference.
#include "runner/policy/allowlist_pattern.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace sandrun::policy {
namespace {

// ---- GlobMatchPath ----------------------------------------------------------------------------

struct GlobRow {
  std::string pattern;
  std::string path;
  bool match;
};

void PrintTo(const GlobRow& r, std::ostream* os) {
  *os << "'" << r.pattern << "' vs '" << r.path << "' -> " << r.match;
}

class GlobTest : public ::testing::TestWithParam<GlobRow> {};

TEST_P(GlobTest, Matches) {
  EXPECT_EQ(GlobMatchPath(GetParam().pattern, GetParam().path), GetParam().match);
}

INSTANTIATE_TEST_SUITE_P(
    Literal, GlobTest,
    ::testing::Values(
        GlobRow{"/usr/bin/rg", "/usr/bin/rg", true}, GlobRow{"/usr/bin/rg", "/usr/bin/rga", false},
        GlobRow{"/usr/bin/rg", "/usr/bin/r", false},
        GlobRow{"/usr/bin/rg", "/usr/local/bin/rg", false},
        GlobRow{"/usr/bin/rg", "/USR/BIN/RG", false},  // case-sensitive
        GlobRow{"/usr/bin/RG", "/usr/bin/rg", false}, GlobRow{"", "", true},
        GlobRow{"", "/x", false}, GlobRow{"/x", "", false},
        // Anchored at both ends.
        GlobRow{"bin/rg", "/usr/bin/rg", false}, GlobRow{"/usr/bin", "/usr/bin/rg", false},
        // Regex metacharacters are literal.
        GlobRow{"/opt/a+b/x", "/opt/a+b/x", true}, GlobRow{"/opt/a+b/x", "/opt/aab/x", false},
        GlobRow{"/opt/a.b", "/opt/a.b", true}, GlobRow{"/opt/a.b", "/opt/axb", false},
        GlobRow{"/opt/[ab]/x", "/opt/[ab]/x", true}, GlobRow{"/opt/[ab]/x", "/opt/a/x", false},
        GlobRow{"/opt/(x)/y", "/opt/(x)/y", true}, GlobRow{"/opt/(x)/y", "/opt/x/y", false},
        GlobRow{"/opt/^x$", "/opt/^x$", true}, GlobRow{"/opt/x{1}", "/opt/x{1}", true},
        GlobRow{"/opt/x{1}", "/opt/x", false}, GlobRow{"/opt/a|b", "/opt/a", false},
        GlobRow{"/opt/a|b", "/opt/a|b", true}));

INSTANTIATE_TEST_SUITE_P(
    SingleStar, GlobTest,
    ::testing::Values(
        GlobRow{"/usr/bin/*", "/usr/bin/rg", true},
        GlobRow{"/usr/bin/*", "/usr/bin/", true},  // * may be empty
        GlobRow{"/usr/bin/*", "/usr/bin/sub/rg", false}, GlobRow{"/usr/*/rg", "/usr/bin/rg", true},
        GlobRow{"/usr/*/rg", "/usr/local/bin/rg", false}, GlobRow{"/usr/*/rg", "/usr//rg", true},
        GlobRow{"/usr/bin/g*", "/usr/bin/git", true}, GlobRow{"/usr/bin/g*", "/usr/bin/rg", false},
        GlobRow{"/usr/bin/*g", "/usr/bin/rg", true}, GlobRow{"/usr/bin/*g", "/usr/bin/git", false},
        GlobRow{"/usr/bin/*i*", "/usr/bin/git", true},
        GlobRow{"/usr/bin/*i*", "/usr/bin/rg", false},
        GlobRow{"/usr/bin/a*b*c", "/usr/bin/aXbYc", true},
        GlobRow{"/usr/bin/a*b*c", "/usr/bin/abc", true},
        GlobRow{"/usr/bin/a*b*c", "/usr/bin/acb", false},
        GlobRow{"/usr/bin/a*b*c", "/usr/bin/a/b/c", false}, GlobRow{"*", "rg", true},
        GlobRow{"*", "", true}, GlobRow{"*", "/rg", false}, GlobRow{"/*", "/rg", true},
        GlobRow{"/*", "/usr/rg", false}, GlobRow{"/opt/*/bin/*", "/opt/tool/bin/run", true},
        GlobRow{"/opt/*/bin/*", "/opt/tool/x/bin/run", false},
        GlobRow{"/opt/*a", "/opt/aaaa", true}, GlobRow{"/opt/*a", "/opt/aaab", false},
        GlobRow{"/opt/*ab", "/opt/aab", true}, GlobRow{"/opt/x*/y", "/opt/x/y", true},
        GlobRow{"/opt/x*/y", "/opt/xa/b/y", false}, GlobRow{"/opt/x*y", "/opt/x/y", false}));

INSTANTIATE_TEST_SUITE_P(
    DoubleStar, GlobTest,
    ::testing::Values(GlobRow{"/opt/**", "/opt/a/b/c", true}, GlobRow{"/opt/**", "/opt/", true},
                      GlobRow{"/opt/**", "/opt", false}, GlobRow{"/opt/**", "/optx/a", false},
                      GlobRow{"**/rg", "/usr/bin/rg", true},
                      GlobRow{"**/rg", "/usr/bin/rga", false}, GlobRow{"**/rg", "rg", false},
                      GlobRow{"**rg", "rg", true}, GlobRow{"/usr/**/rg", "/usr/bin/rg", true},
                      GlobRow{"/usr/**/rg", "/usr/local/bin/rg", true},
                      GlobRow{"/usr/**/rg", "/usr/rg", false},  // the slashes stay literal
                      GlobRow{"/usr/**rg", "/usr/rg", true}, GlobRow{"**", "", true},
                      GlobRow{"**", "/any/thing", true}, GlobRow{"***", "/a/b", true},
                      GlobRow{"/a/***/z", "/a/b/c/z", true},
                      GlobRow{"/home/**/bin/*", "/home/u/x/bin/tool", true},
                      GlobRow{"/home/**/bin/*", "/home/u/x/bin/sub/tool", false},
                      GlobRow{"/home/**/bin/*", "/home/bin/tool", false},
                      GlobRow{"/home/**bin/*", "/home/bin/tool", true},
                      GlobRow{"**a*b", "xa/ab", true},  // falls back from '*' to "**"
                      GlobRow{"**a*b", "xa/ac", false}, GlobRow{"**/a*/b", "x/a1/a2/b", true},
                      GlobRow{"**/a*/b", "x/a1/b2/b", false},
                      GlobRow{"/x/**/y/**/z", "/x/1/y/2/z", true},
                      GlobRow{"/x/**/y/**/z", "/x/1/y/z", false},
                      GlobRow{"/x/**/y/**/z", "/x/1/2/y/3/4/z", true},
                      GlobRow{"/x/**/y/**/z", "/x/1/z/2/y", false}));

INSTANTIATE_TEST_SUITE_P(QuestionMark, GlobTest,
                         ::testing::Values(GlobRow{"/usr/bin/r?", "/usr/bin/rg", true},
                                           GlobRow{"/usr/bin/r?", "/usr/bin/r", false},
                                           GlobRow{"/usr/bin/r?", "/usr/bin/rgg", false},
                                           GlobRow{"/usr/bin?rg", "/usr/bin/rg",
                                                   false},  // ? never matches '/'
                                           GlobRow{"/usr/bin???", "/usr/binabc", true},
                                           GlobRow{"/usr/bin/??", "/usr/bin/ls", true},
                                           GlobRow{"/usr/bin/?*", "/usr/bin/", false},
                                           GlobRow{"/usr/bin/?*", "/usr/bin/x", true},
                                           GlobRow{"/usr/**?", "/usr/a/b", true}));

INSTANTIATE_TEST_SUITE_P(Backslashes, GlobTest,
                         ::testing::Values(GlobRow{"C:/tools/rg.exe", "C:\\tools\\rg.exe", true},
                                           GlobRow{"C:\\tools\\rg.exe", "C:/tools/rg.exe", true},
                                           GlobRow{"C:/tools/*", "C:\\tools\\rg.exe", true},
                                           GlobRow{"C:/tools/*", "C:\\tools\\sub\\rg.exe", false},
                                           GlobRow{"C:/tools/?", "C:/tools\\", false},
                                           GlobRow{"C:/**", "C:\\a\\b", true}));

// A direct, exponential-in-the-worst-case reference: the same rules, written as recursion.
bool Reference(const std::string& p, size_t pi, const std::string& t, size_t ti) {
  auto norm = [](char c) { return c == '\\' ? '/' : c; };
  if (pi == p.size()) return ti == t.size();
  if (p[pi] == '*') {
    size_t j = pi;
    while (j < p.size() && p[j] == '*') ++j;
    bool dbl = j - pi >= 2;
    for (size_t k = ti; k <= t.size(); ++k) {
      if (Reference(p, j, t, k)) return true;
      if (k < t.size() && !dbl && norm(t[k]) == '/') break;
    }
    return false;
  }
  if (ti == t.size()) return false;
  if (p[pi] == '?') return norm(t[ti]) != '/' && Reference(p, pi + 1, t, ti + 1);
  return norm(p[pi]) == norm(t[ti]) && Reference(p, pi + 1, t, ti + 1);
}

TEST(GlobMatchPathTest, AgreesWithBruteForceOnRandomInputs) {
  std::mt19937 rng(12345);
  const std::string pattern_alphabet = "ab/*?\\";
  const std::string text_alphabet = "ab/\\";
  for (int n = 0; n < 60000; ++n) {
    std::string p, t;
    size_t plen = rng() % 9, tlen = rng() % 11;
    for (size_t i = 0; i < plen; ++i) p += pattern_alphabet[rng() % pattern_alphabet.size()];
    for (size_t i = 0; i < tlen; ++i) t += text_alphabet[rng() % text_alphabet.size()];
    ASSERT_EQ(GlobMatchPath(p, t), Reference(p, 0, t, 0)) << "'" << p << "' vs '" << t << "'";
  }
}

TEST(GlobMatchPathTest, PathologicalPatternsStayFast) {
  // Patterns that make backtracking regex engines explode.
  std::string long_a(4000, 'a');
  std::string segments;
  for (int i = 0; i < 200; ++i) segments += "/" + std::string(19, 'a');
  // Compared with simple patterns over the same subjects in the same run (no absolute limit):
  // the two-pointer matcher is O(n*m); a backtracking one would be exponential here.
  auto seconds = [](const std::function<void()>& f) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double simple = seconds([&] {
    EXPECT_FALSE(GlobMatchPath("*b", long_a));
    EXPECT_FALSE(GlobMatchPath("**b", segments));
  });
  const double hard = seconds([&] {
    EXPECT_FALSE(GlobMatchPath("*a*a*a*a*a*a*a*a*a*b", long_a));
    EXPECT_FALSE(GlobMatchPath("**a*a*a*a*a*a*a*a*a*b", long_a));
    EXPECT_FALSE(GlobMatchPath("**a**a**a**a**a**a**a**a**b", long_a));
    EXPECT_FALSE(GlobMatchPath("**/a*a*a*a*a*b/**", segments));
    EXPECT_TRUE(GlobMatchPath("**/a*a*a*a*a*a", segments));
  });
  EXPECT_LT(hard, 500 * simple + 0.05) << hard << " s vs " << simple << " s";
}

// ---- ExpandPatternHome ------------------------------------------------------------------------

struct HomeRow {
  std::string pattern;
  std::string home;
  std::string expanded;
};

class ExpandHomeTest : public ::testing::TestWithParam<HomeRow> {};

TEST_P(ExpandHomeTest, Expands) {
  EXPECT_EQ(ExpandPatternHome(GetParam().pattern, GetParam().home), GetParam().expanded);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ExpandHomeTest,
    ::testing::Values(HomeRow{"~", "/home/u", "/home/u"},
                      HomeRow{"~/bin/x", "/home/u", "/home/u/bin/x"},
                      HomeRow{"~/bin/*", "/home/u/", "/home/u/bin/*"},
                      HomeRow{"~/", "/home/u", "/home/u/"},
                      HomeRow{"~\\bin", "/home/u", "/home/u\\bin"}, HomeRow{"~/x", "/", "/x"},
                      HomeRow{"~", "/", "/"}, HomeRow{"~user/bin", "/home/u", "~user/bin"},
                      HomeRow{"~~", "/home/u", "~~"}, HomeRow{"/opt/~/x", "/home/u", "/opt/~/x"},
                      HomeRow{"rg", "/home/u", "rg"}, HomeRow{"", "/home/u", ""},
                      // No home: nothing is expanded, so "~/x" cannot become "/x".
                      HomeRow{"~/x", "", "~/x"}, HomeRow{"~", "", "~"}));

// ---- MatchAllowlist ---------------------------------------------------------------------------

struct AllowRow {
  std::string name;
  std::vector<std::string> patterns;
  MatchTarget target;
  std::optional<size_t> index;
};

void PrintTo(const AllowRow& r, std::ostream* os) { *os << r.name; }

class MatchAllowlistTest : public ::testing::TestWithParam<AllowRow> {};

TEST_P(MatchAllowlistTest, FirstMatchingIndex) {
  EXPECT_EQ(MatchAllowlist(GetParam().patterns, GetParam().target, "/home/u"), GetParam().index);
}

const MatchTarget kRgViaPath{"rg", true, "/usr/bin/rg", ""};
const MatchTarget kRgRelative{"./rg", false, "/work/rg", ""};
const MatchTarget kRgAbsolute{"/usr/bin/rg", false, "/usr/bin/rg", ""};
const MatchTarget kUnresolvedPath{"./build/tool", false, "", "/work/build/tool"};
const MatchTarget kUnresolvedName{"nosuch", true, "", ""};
const MatchTarget kHomeTool{"tool", true, "/home/u/bin/tool", ""};
const MatchTarget kSymlinked{"python3", true, "/usr/bin/python3.11", ""};

INSTANTIATE_TEST_SUITE_P(
    Star, MatchAllowlistTest,
    ::testing::Values(AllowRow{"star_matches_resolved", {"*"}, kRgViaPath, 0},
                      AllowRow{"star_matches_unresolved", {"*"}, kUnresolvedName, 0},
                      AllowRow{"star_matches_unresolved_path", {"*"}, kUnresolvedPath, 0},
                      AllowRow{"star_trimmed", {"  *  "}, kRgRelative, 0},
                      AllowRow{"star_after_miss", {"/opt/x", "*"}, kRgViaPath, 1},
                      AllowRow{"double_star_is_not_lone_star", {"**"}, kUnresolvedName, {}},
                      AllowRow{"double_star_bare_matches_name", {"**"}, kRgViaPath, 0},
                      AllowRow{"star_slash_is_path", {"*/rg"}, kRgViaPath, {}}));

INSTANTIATE_TEST_SUITE_P(
    PathGlobs, MatchAllowlistTest,
    ::testing::Values(
        AllowRow{"exact_path", {"/usr/bin/rg"}, kRgViaPath, 0},
        AllowRow{"exact_path_absolute_invocation", {"/usr/bin/rg"}, kRgAbsolute, 0},
        AllowRow{"path_against_realpath_not_invoked", {"/usr/bin/python3"}, kSymlinked, {}},
        AllowRow{"path_glob_realpath", {"/usr/bin/python3*"}, kSymlinked, 0},
        AllowRow{"path_relative_invocation", {"/work/rg"}, kRgRelative, 0},
        AllowRow{"path_glob_dir", {"/usr/bin/*"}, kRgViaPath, 0},
        AllowRow{"path_glob_other_dir", {"/usr/local/bin/*"}, kRgViaPath, {}},
        AllowRow{"path_doublestar", {"/usr/**"}, kRgViaPath, 0},
        AllowRow{"path_trimmed", {"\t/usr/bin/rg \n"}, kRgViaPath, 0},
        AllowRow{"path_unresolved_uses_cwd_path", {"/work/build/*"}, kUnresolvedPath, 0},
        AllowRow{"path_unresolved_without_cwd_path", {"/**"}, kUnresolvedName, {}},
        AllowRow{"tilde_home", {"~/bin/tool"}, kHomeTool, 0},
        AllowRow{"tilde_glob", {"~/bin/*"}, kHomeTool, 0},
        AllowRow{"tilde_doublestar", {"~/**"}, kHomeTool, 0},
        AllowRow{"tilde_other_tool", {"~/bin/other"}, kHomeTool, {}},
        AllowRow{"tilde_user_is_literal", {"~u/bin/tool"}, kHomeTool, {}},
        AllowRow{"backslash_is_path_pattern", {"\\usr\\bin\\rg"}, kRgViaPath, 0},
        AllowRow{"relative_pattern_never_matches_absolute", {"bin/rg"}, kRgViaPath, {}},
        AllowRow{"first_of_several", {"/opt/*", "/usr/bin/rg", "/usr/bin/*"}, kRgViaPath, 1}));

INSTANTIATE_TEST_SUITE_P(
    BareNames, MatchAllowlistTest,
    ::testing::Values(AllowRow{"bare_name_via_path", {"rg"}, kRgViaPath, 0},
                      AllowRow{"bare_name_relative_invocation", {"rg"}, kRgRelative, {}},
                      AllowRow{"bare_name_absolute_invocation", {"rg"}, kRgAbsolute, {}},
                      AllowRow{"bare_name_unresolved", {"nosuch"}, kUnresolvedName, {}},
                      AllowRow{"bare_glob", {"r*"}, kRgViaPath, 0},
                      AllowRow{"bare_glob_question", {"r?"}, kRgViaPath, 0},
                      AllowRow{"bare_glob_miss", {"git*"}, kRgViaPath, {}},
                      AllowRow{"bare_name_is_invoked_not_realpath", {"python3.11"}, kSymlinked, {}},
                      AllowRow{"bare_name_invoked", {"python3"}, kSymlinked, 0},
                      AllowRow{"bare_case_sensitive", {"RG"}, kRgViaPath, {}},
                      AllowRow{"bare_partial", {"r"}, kRgViaPath, {}},
                      AllowRow{"bare_trimmed", {" rg "}, kRgViaPath, 0},
                      AllowRow{"bare_via_path_flag_with_slash_ignored",
                               {"rg"},
                               MatchTarget{"x/rg", true, "/work/x/rg", ""},
                               {}},
                      AllowRow{"empty_patterns_skipped", {"", "   ", "rg"}, kRgViaPath, 2},
                      AllowRow{"no_patterns", {}, kRgViaPath, {}},
                      AllowRow{"only_empty", {"", " \t"}, kUnresolvedName, {}}));

}  // namespace
}  // namespace sandrun::policy
