// The fail-closed shell analyser: one table of (input, accepted?, structure or refusal category),
// QuoteShellWord round trips over every byte, RenderShellCommand, and large inputs.
#include "runner/policy/shell_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace sandrun::policy {
namespace {

using namespace std::string_literals;

// Canonical text of an accepted analysis: parts joined by " && ", " || ", " ; "; segments by
// " | "; assignments as {NAME=value}, words as <text> with a trailing ! when they expand. Inside,
// a backslash is \\, a newline \n, a tab \t, other control and non-ASCII bytes \xHH.
std::string Escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string Describe(const ShellAnalysis& a, bool flags = true) {
  if (!a.ok) return "refused: " + a.reason;
  std::string out;
  for (size_t p = 0; p < a.parts.size(); ++p) {
    if (p > 0) out += " "s + ChainOpText(a.parts[p].op) + " ";
    const auto& pipeline = a.parts[p].pipeline;
    for (size_t s = 0; s < pipeline.size(); ++s) {
      if (s > 0) out += " | ";
      std::string seg;
      for (const auto& as : pipeline[s].assignments) {
        seg += (seg.empty() ? "{" : " {") + Escape(as) + "}";
      }
      for (const auto& w : pipeline[s].words) {
        seg += (seg.empty() ? "<" : " <") + Escape(w.text) + (w.expands && flags ? ">!" : ">");
      }
      out += seg;
    }
  }
  return out;
}

struct Row {
  std::string input;
  bool ok;
  std::string expected;  // Describe() text when ok, else the category
};

void PrintTo(const Row& row, std::ostream* os) { *os << '"' << Escape(row.input) << '"'; }

constexpr bool kOk = true;
constexpr bool kNo = false;

class AnalyzeTest : public ::testing::TestWithParam<Row> {};

TEST_P(AnalyzeTest, Table) {
  const Row& row = GetParam();
  const ShellAnalysis a = AnalyzeShellCommand(row.input);
  SCOPED_TRACE("input: \"" + Escape(row.input) + "\"");
  ASSERT_EQ(a.ok, row.ok) << Describe(a);
  if (!row.ok) {
    EXPECT_EQ(a.reason, row.expected);
    EXPECT_TRUE(a.parts.empty());
    return;
  }
  EXPECT_EQ(a.reason, "");
  EXPECT_EQ(Describe(a), row.expected);
  ASSERT_FALSE(a.parts.empty());
  EXPECT_EQ(a.parts[0].op, ChainOp::kFirst);
  for (size_t p = 0; p < a.parts.size(); ++p) {
    if (p > 0) {
      EXPECT_NE(a.parts[p].op, ChainOp::kFirst);
    }
    ASSERT_FALSE(a.parts[p].pipeline.empty());
    for (const auto& seg : a.parts[p].pipeline) EXPECT_FALSE(seg.words.empty());
  }
  // Rendering and analysing again gives the same structure, with nothing left to expand.
  const std::string rendered = RenderShellCommand(a.parts);
  const ShellAnalysis again = AnalyzeShellCommand(rendered);
  EXPECT_EQ(Describe(again), Describe(a, /*flags=*/false)) << "rendered: " << Escape(rendered);
}

// clang-format off
const Row kRows[] = {
    // Simple commands, words and whitespace.
    {"ls", kOk, "<ls>"}, {"ls -la", kOk, "<ls> <-la>"}, {"  ls   -la  ", kOk, "<ls> <-la>"},
    {"\tls\t-la\t", kOk, "<ls> <-la>"}, {"ls -la /tmp", kOk, "<ls> <-la> </tmp>"},
    {"git status --short", kOk, "<git> <status> <--short>"},
    {"/usr/bin/env", kOk, "</usr/bin/env>"},
    {"./run.sh --flag=value", kOk, "<./run.sh> <--flag=value>"},
    {"echo hello world", kOk, "<echo> <hello> <world>"},
    {"echo a\vb", kOk, "<echo> <a\\x0bb>"},
    {"echo \xc3\xa9t\xc3\xa9", kOk, "<echo> <\\xc3\\xa9t\\xc3\\xa9>"},
    {"echo \xff\xfe", kOk, "<echo> <\\xff\\xfe>"}, {"echo \x01", kOk, "<echo> <\\x01>"},
    {"echo a%b@c+d:e,f.g/h-i_j", kOk, "<echo> <a%b@c+d:e,f.g/h-i_j>"},
    {"echo !", kOk, "<echo> <!>"}, {"echo hi!", kOk, "<echo> <hi!>"}, {"!ls", kOk, "<!ls>"},
    {"echo ^ ]", kOk, "<echo> <^> <]>"}, {":", kOk, "<:>"}, {"true", kOk, "<true>"},
    {"cd /tmp && pwd", kOk, "<cd> </tmp> && <pwd>"}, {"[ -f x ]", kOk, "<[> <-f> <x> <]>"},
    {"test a = b", kOk, "<test> <a> <=> <b>"}, {"echo =", kOk, "<echo> <=>"},
    {"echo a=b", kOk, "<echo> <a=b>"}, {"{ls", kOk, "<{ls>"}, {"{}", kOk, "<{}>"},
    {"ls }", kOk, "<ls> <}>"}, {"ls {", kOk, "<ls> <{>"}, {"ls [[ ]]", kOk, "<ls> <[[> <]]>"},
    // Quoting and escaping.
    {"echo 'a b'", kOk, "<echo> <a b>"}, {"echo \"a b\"", kOk, "<echo> <a b>"},
    {"echo a'b'\"c\"d", kOk, "<echo> <abcd>"}, {"echo ''", kOk, "<echo> <>"},
    {"echo \"\"", kOk, "<echo> <>"}, {"'' x", kOk, "<> <x>"}, {"echo '' ''", kOk, "<echo> <> <>"},
    {"echo \\a\\b", kOk, "<echo> <ab>"}, {"echo a\\ b", kOk, "<echo> <a b>"},
    {"echo \\'", kOk, "<echo> <'>"}, {"echo \\\"", kOk, "<echo> <\">"},
    {"echo \\\\", kOk, R"(<echo> <\\>)"}, {"echo \\$HOME", kOk, "<echo> <$HOME>"},
    {"echo \\`x\\`", kOk, "<echo> <`x`>"},
    {"echo \\$(x)", kNo, "syntax-error"},  // the ( after an escaped $ is still a metacharacter
    {"echo '$(x)'", kOk, "<echo> <$(x)>"}, {"echo \"\\$(x)\"", kOk, "<echo> <$(x)>"},
    {"echo \"\\`x\\`\"", kOk, "<echo> <`x`>"}, {"echo '`x`'", kOk, "<echo> <`x`>"},
    {"echo '$HOME'", kOk, "<echo> <$HOME>"}, {"echo \"a\\\\b\"", kOk, R"(<echo> <a\\b>)"},
    {"echo \"a\\b\"", kOk, R"(<echo> <a\\b>)"}, {"echo \"a\\nb\"", kOk, R"(<echo> <a\\nb>)"},
    {"echo \"\\\"\"", kOk, "<echo> <\">"}, {"echo \"\\'\"", kOk, R"(<echo> <\\'>)"},
    {"echo '\\'", kOk, R"(<echo> <\\>)"}, {"echo '\"'", kOk, "<echo> <\">"},
    {"echo \"'\"", kOk, "<echo> <'>"}, {"echo 'a'\\''b'", kOk, "<echo> <a'b>"},
    {"echo 'a'\"'\"'b'", kOk, "<echo> <a'b>"}, {"echo 'a\nb'", kOk, "<echo> <a\\nb>"},
    {"echo \"a\nb\"", kOk, "<echo> <a\\nb>"}, {"echo 'a\\\nb'", kOk, R"(<echo> <a\\\nb>)"},
    {"echo 'a\rb'", kOk, "<echo> <a\\x0db>"}, {"echo \"a\rb\"", kOk, "<echo> <a\\x0db>"},
    {"echo a\\\rb", kOk, "<echo> <a\\x0db>"}, {"echo \"a # b\"", kOk, "<echo> <a # b>"},
    {"echo 'a;b|c&d>e<f(g)h'", kOk, "<echo> <a;b|c&d>e<f(g)h>"},
    {"echo \"a;b|c&d>e<f(g)h\"", kOk, "<echo> <a;b|c&d>e<f(g)h>"},
    {"echo a\\;b\\|c\\&d\\>e\\<f\\(g\\)h", kOk, "<echo> <a;b|c&d>e<f(g)h>"},
    {"echo \\*", kOk, "<echo> <*>"}, {"echo \\{a,b}", kOk, "<echo> <{a,b}>"},
    {"echo \"$\\\"\"", kNo, "dynamic-argument"},
    // Comments.
    {"ls # comment", kOk, "<ls>"}, {"ls #", kOk, "<ls>"}, {"echo a#b", kOk, "<echo> <a#b>"},
    {"echo x#", kOk, "<echo> <x#>"}, {"echo #b", kOk, "<echo>"}, {"echo a #b c", kOk, "<echo> <a>"},
    {"echo \\#x", kOk, "<echo> <#x>"}, {"echo '#x'", kOk, "<echo> <#x>"},
    {"echo \"#x\"", kOk, "<echo> <#x>"}, {"# c\nls", kOk, "<ls>"},
    {"ls\n# c\necho", kOk, "<ls> ; <echo>"}, {"ls;#c", kOk, "<ls>"},
    {"ls&&#c\necho", kOk, "<ls> && <echo>"}, {"ls | # c\n grep x", kOk, "<ls> | <grep> <x>"},
    {"ls # $(x) > y `z` 'q", kOk, "<ls>"}, {"ls # c\r", kOk, "<ls>"},
    // Chains and pipelines.
    {"a && b", kOk, "<a> && <b>"}, {"a || b", kOk, "<a> || <b>"}, {"a ; b", kOk, "<a> ; <b>"},
    {"a;b", kOk, "<a> ; <b>"}, {"a&&b||c;d", kOk, "<a> && <b> || <c> ; <d>"},
    {"a|b|c", kOk, "<a> | <b> | <c>"},
    {"a | b && c | d", kOk, "<a> | <b> && <c> | <d>"},
    {"cat a | grep -e x | sort | uniq -c | head -n 5", kOk,
     "<cat> <a> | <grep> <-e> <x> | <sort> | <uniq> <-c> | <head> <-n> <5>"},
    {"ls\necho hi", kOk, "<ls> ; <echo> <hi>"}, {"ls\n\n\necho", kOk, "<ls> ; <echo>"},
    {"\n\nls\n\n", kOk, "<ls>"}, {"ls;\necho", kOk, "<ls> ; <echo>"},
    {"echo a &&\necho b", kOk, "<echo> <a> && <echo> <b>"},
    {"ls &&\n\necho", kOk, "<ls> && <echo>"}, {"ls ||\n echo", kOk, "<ls> || <echo>"},
    {"ls |\n grep x", kOk, "<ls> | <grep> <x>"}, {"ls;", kOk, "<ls>"}, {"ls ; ", kOk, "<ls>"},
    {"ls;\n", kOk, "<ls>"}, {"a; b;", kOk, "<a> ; <b>"}, {"a\n b \n c", kOk, "<a> ; <b> ; <c>"},
    {"a | b\nc || d", kOk, "<a> | <b> ; <c> || <d>"},
    {"ls;echo", kOk, "<ls> ; <echo>"}, {"ls&&echo", kOk, "<ls> && <echo>"},
    {"ls||echo", kOk, "<ls> || <echo>"}, {"ls|grep x", kOk, "<ls> | <grep> <x>"},
    // Assignments.
    {"FOO=1 ls", kOk, "{FOO=1} <ls>"},
    {"FOO=1 BAR=2 env", kOk, "{FOO=1} {BAR=2} <env>"},
    {"FOO='a b' ls", kOk, "{FOO=a b} <ls>"}, {"FOO=\"x y\" ls", kOk, "{FOO=x y} <ls>"},
    {"FOO= ls", kOk, "{FOO=} <ls>"}, {"FOO='' ls", kOk, "{FOO=} <ls>"},
    {"_x=1 ls", kOk, "{_x=1} <ls>"}, {"A1_b=1 ls", kOk, "{A1_b=1} <ls>"},
    {"FOO+=1 ls", kOk, "{FOO+=1} <ls>"}, {"FOO=a=b ls", kOk, "{FOO=a=b} <ls>"},
    {"FOO=* ls", kOk, "{FOO=*} <ls>"}, {"FOO=~ ls", kOk, "{FOO=~} <ls>"},
    {"FOO=a\\ b ls", kOk, "{FOO=a b} <ls>"},
    {"FOO=1 ls | BAR=2 cat", kOk, "{FOO=1} <ls> | {BAR=2} <cat>"},
    {"ls FOO=1", kOk, "<ls> <FOO=1>"}, {"env FOO=1 ls", kOk, "<env> <FOO=1> <ls>"},
    {"1FOO=1 ls", kOk, "<1FOO=1> <ls>"}, {"\"FOO\"=1 ls", kOk, "<FOO=1> <ls>"},
    {"FOO\\=1 ls", kOk, "<FOO=1> <ls>"}, {"'FOO=1' ls", kOk, "<FOO=1> <ls>"},
    {"F-O=1 ls", kOk, "<F-O=1> <ls>"}, {"=1 ls", kOk, "<=1> <ls>"},
    {"FOO+1=2 ls", kOk, "<FOO+1=2> <ls>"}, {"FOO=1", kNo, "variable-assignment"},
    {"FOO=1 BAR=2", kNo, "variable-assignment"}, {"FOO=1 && ls", kNo, "variable-assignment"},
    {"FOO=1 || ls", kNo, "variable-assignment"}, {"ls | FOO=1", kNo, "variable-assignment"},
    {"FOO=1 | ls", kNo, "variable-assignment"}, {"FOO=1;", kNo, "variable-assignment"},
    {"ls; FOO=1", kNo, "variable-assignment"}, {"FOO=1\nls", kNo, "variable-assignment"},
    {"FOO=1 # c", kNo, "variable-assignment"}, {"FOO=$(x) ls", kNo, "command-substitution"},
    {"FOO=`x` ls", kNo, "command-substitution"}, {"FOO=$BAR ls", kNo, "dynamic-argument"},
    {"FOO=\"$BAR\" ls", kNo, "dynamic-argument"}, {"a=(1 2)", kNo, "array-assignment"},
    {"a=(1 2) ls", kNo, "array-assignment"}, {"a+=(3)", kNo, "array-assignment"},
    {"a[0]=1 ls", kNo, "array-assignment"}, {"a[0]=1", kNo, "array-assignment"},
    {"echo a=(1)", kNo, "syntax-error"}, {"echo a[0]=1", kOk, "<echo> <a[0]=1>!"},
    // Expansion flags.
    {"ls *.txt", kOk, "<ls> <*.txt>!"}, {"ls ?", kOk, "<ls> <?>!"}, {"ls a?c", kOk, "<ls> <a?c>!"},
    {"ls [ab]", kOk, "<ls> <[ab]>!"}, {"ls a[bc]d", kOk, "<ls> <a[bc]d>!"},
    {"ls [\\]]", kOk, "<ls> <[]]>!"}, {"ls x[']']", kOk, "<ls> <x[]]>!"}, {"ls [", kOk, "<ls> <[>"},
    {"ls a[", kOk, "<ls> <a[>"}, {"ls ]", kOk, "<ls> <]>"}, {"ls ][", kOk, "<ls> <][>"},
    {"ls '*.txt'", kOk, "<ls> <*.txt>"}, {"ls \"*.txt\"", kOk, "<ls> <*.txt>"},
    {"ls \\*.txt", kOk, "<ls> <*.txt>"}, {"ls a'*'", kOk, "<ls> <a*>"},
    {"ls '['ab]", kOk, "<ls> <[ab]>"}, {"ls \"*\"*", kOk, "<ls> <**>!"}, {"*", kOk, "<*>!"},
    {"echo {a,b}", kOk, "<echo> <{a,b}>!"}, {"echo {1..3}", kOk, "<echo> <{1..3}>!"},
    {"echo x{a,b}y", kOk, "<echo> <x{a,b}y>!"}, {"echo {,}", kOk, "<echo> <{,}>!"},
    {"echo {a,'b'}", kOk, "<echo> <{a,b}>!"}, {"echo {1.\\.3}", kOk, "<echo> <{1..3}>!"},
    {"echo {a}b,c}", kOk, "<echo> <{a}b,c}>!"}, {"echo {a,b", kOk, "<echo> <{a,b>"},
    {"echo a,b}", kOk, "<echo> <a,b}>"}, {"echo {}", kOk, "<echo> <{}>"},
    {"echo {x}", kOk, "<echo> <{x}>"}, {"echo '{a,b}'", kOk, "<echo> <{a,b}>"},
    {"echo \"{a,b}\"", kOk, "<echo> <{a,b}>"}, {"echo {a,b\\}", kOk, "<echo> <{a,b}>"},
    {"echo {a,b'}'", kOk, "<echo> <{a,b}>"},
    {"git log @{u}..HEAD", kOk, "<git> <log> <@{u}..HEAD>"},
    {"{a,b}", kOk, "<{a,b}>!"}, {"{ls,-la}", kOk, "<{ls,-la}>!"},
    {"find . -name x -exec rm {} \\;", kOk,
     "<find> <.> <-name> <x> <-exec> <rm> <{}> <;>"},
    {"find . -exec echo {} +", kOk, "<find> <.> <-exec> <echo> <{}> <+>"},
    {"echo ~", kOk, "<echo> <~>!"}, {"echo ~/x", kOk, "<echo> <~/x>!"},
    {"echo ~root", kOk, "<echo> <~root>!"}, {"~/bin/tool", kOk, "<~/bin/tool>!"},
    {"echo a~", kOk, "<echo> <a~>"}, {"echo '~'", kOk, "<echo> <~>"},
    {"echo \"~\"", kOk, "<echo> <~>"}, {"echo \\~", kOk, "<echo> <~>"},
    {"echo x=~/a", kOk, "<echo> <x=~/a>!"}, {"echo x=a:~/b", kOk, "<echo> <x=a:~/b>!"},
    {"echo x='':~", kOk, "<echo> <x=:~>!"}, {"echo a:~", kOk, "<echo> <a:~>"},
    {"echo --dir=~", kOk, "<echo> <--dir=~>"}, {"git log HEAD~1", kOk, "<git> <log> <HEAD~1>"},
    {"ls *.c | wc -l", kOk, "<ls> <*.c>! | <wc> <-l>"},
    // Reserved words outside command position, or quoted, are plain words.
    {"echo if then else elif fi do done case esac while until for select in", kOk,
     "<echo> <if> <then> <else> <elif> <fi> <do> <done> <case> <esac> <while> <until> <for> "
     "<select> <in>"},
    {"echo { } ! [[ ]] time function coproc", kOk,
     "<echo> <{> <}> <!> <[[> <]]> <time> <function> <coproc>"},
    {"'if' x", kOk, "<if> <x>"}, {"\"for\"", kOk, "<for>"}, {"\\if", kOk, "<if>"},
    {"i\\f", kOk, "<if>"}, {"'{' x", kOk, "<{> <x>"}, {"\\! ls", kOk, "<!> <ls>"},
    {"'time' ls", kOk, "<time> <ls>"}, {"iff", kOk, "<iff>"}, {"done2", kOk, "<done2>"},
    {"ls if", kOk, "<ls> <if>"},
    // Reserved words and compound commands at command position.
    {"if true; then ls; fi", kNo, "if"}, {"if", kNo, "if"}, {"if;", kNo, "if"},
    {"ls && if x", kNo, "if"}, {"FOO=1 if x", kNo, "if"}, {"for x in a; do echo; done", kNo, "for"},
    {"for((i=0;i<3;i++))", kNo, "for"}, {"ls; for x", kNo, "for"},
    {"while true; do :; done", kNo, "while"}, {"until false; do :; done", kNo, "while"},
    {"ls | while read l; do :; done", kNo, "while"}, {"case x in x) ;; esac", kNo, "case"},
    {"ls || case", kNo, "case"}, {"select x in a b; do :; done", kNo, "select"},
    {"coproc ls", kNo, "coproc"}, {"time ls", kNo, "time"}, {"ls | time grep x", kNo, "time"},
    {"function f { ls; }", kNo, "function-definition"},
    {"function f() { ls; }", kNo, "function-definition"},
    {"f() { ls; }", kNo, "function-definition"}, {"f () { ls; }", kNo, "function-definition"},
    {"f ( ) ls", kNo, "function-definition"}, {"f()", kNo, "function-definition"},
    {"ls && f() { x; }", kNo, "function-definition"},
    {"'f'() { x; }", kNo, "function-definition"}, {"{ ls; }", kNo, "group"}, {"{", kNo, "group"},
    {"ls && { x; }", kNo, "group"}, {"{ ls; } > out", kNo, "group"},
    {"[[ -f x ]]", kNo, "test-expression"}, {"[[ -f x ]] && ls", kNo, "test-expression"},
    {"ls && [[ x ]]", kNo, "test-expression"}, {"((i++))", kNo, "arithmetic"},
    {"(( 1 ))", kNo, "arithmetic"}, {"ls && ((x))", kNo, "arithmetic"}, {"! ls", kNo, "negation"},
    {"!", kNo, "negation"}, {"ls | ! grep", kNo, "negation"}, {"ls && ! x", kNo, "negation"},
    {"}", kNo, "syntax-error"}, {"ls; }", kNo, "syntax-error"}, {"then", kNo, "syntax-error"},
    {"else x", kNo, "syntax-error"}, {"elif x", kNo, "syntax-error"}, {"fi", kNo, "syntax-error"},
    {"do", kNo, "syntax-error"}, {"ls; done", kNo, "syntax-error"}, {"esac", kNo, "syntax-error"},
    {"in", kNo, "syntax-error"}, {"]]", kNo, "syntax-error"},
    // Subshells and parentheses.
    {"(ls)", kNo, "subshell"}, {"( ls )", kNo, "subshell"}, {"( (ls) )", kNo, "subshell"},
    {"ls && (cd x; ls)", kNo, "subshell"}, {"ls | (cat)", kNo, "subshell"},
    {"ls;(x)", kNo, "subshell"}, {"echo (x)", kNo, "syntax-error"},
    {"echo a(b)", kNo, "syntax-error"}, {"echo (", kNo, "syntax-error"},
    {"ls @(x)", kNo, "syntax-error"}, {"ls !(x)", kNo, "syntax-error"},
    {"FOO=1 (ls)", kNo, "syntax-error"}, {"f (x)", kNo, "syntax-error"},
    {"ls )", kNo, "syntax-error"}, {")", kNo, "syntax-error"},
    // Redirections.
    {"ls > out", kNo, "redirect"}, {"ls >out", kNo, "redirect"}, {"ls>out", kNo, "redirect"},
    {"ls >> out", kNo, "redirect"}, {"ls < in", kNo, "redirect"}, {"ls 2>&1", kNo, "redirect"},
    {"ls 2> /dev/null", kNo, "redirect"}, {"ls 1>&2", kNo, "redirect"}, {"ls >&2", kNo, "redirect"},
    {"ls <&0", kNo, "redirect"}, {"ls &> x", kNo, "redirect"}, {"ls &>> x", kNo, "redirect"},
    {"&> x ls", kNo, "redirect"}, {"ls >| x", kNo, "redirect"}, {"ls <> x", kNo, "redirect"},
    {"ls |& cat", kNo, "redirect"}, {"> x", kNo, "redirect"}, {"< x cat", kNo, "redirect"},
    {"echo a>b", kNo, "redirect"}, {"ls {fd}>x", kNo, "redirect"}, {"FOO=1 > x", kNo, "redirect"},
    {"ls && cat < x", kNo, "redirect"},
    // Heredocs and here-strings.
    {"cat <<EOF\nhi\nEOF", kNo, "heredoc"}, {"cat <<'EOF'\nhi\nEOF", kNo, "heredoc"},
    {"cat <<\"EOF\"\nhi\nEOF", kNo, "heredoc"}, {"cat <<-EOF\n\thi\nEOF", kNo, "heredoc"},
    {"cat<<EOF", kNo, "heredoc"}, {"ls && cat <<X", kNo, "heredoc"}, {"cat << EOF", kNo, "heredoc"},
    {"cat <<< x", kNo, "here-string"}, {"cat <<<x", kNo, "here-string"},
    {"grep a <<< \"$x\"", kNo, "here-string"},
    // Process substitution.
    {"cat <(ls)", kNo, "process-substitution"}, {"diff <(a) <(b)", kNo, "process-substitution"},
    {"tee >(cat)", kNo, "process-substitution"}, {"cat a<(ls)", kNo, "process-substitution"},
    {"ls | tee >(wc)", kNo, "process-substitution"},
    // Command substitution.
    {"echo $(whoami)", kNo, "command-substitution"}, {"echo `whoami`", kNo, "command-substitution"},
    {"echo \"$(whoami)\"", kNo, "command-substitution"},
    {"echo \"`x`\"", kNo, "command-substitution"}, {"echo a$(x)b", kNo, "command-substitution"},
    {"ls && echo $(x)", kNo, "command-substitution"},
    {"echo $( x )", kNo, "command-substitution"},
    {"echo '$(x)' $(y)", kNo, "command-substitution"},
    {"echo \"a $(b) c\"", kNo, "command-substitution"},
    {"ls $(", kNo, "command-substitution"}, {"ls `", kNo, "command-substitution"},
    {"git commit -m \"`date`\"", kNo, "command-substitution"},
    // Dynamic arguments.
    {"echo $HOME", kNo, "dynamic-argument"}, {"echo ${HOME}", kNo, "dynamic-argument"},
    {"echo ${HOME:-x}", kNo, "dynamic-argument"}, {"echo $1", kNo, "dynamic-argument"},
    {"echo $0", kNo, "dynamic-argument"}, {"echo $@", kNo, "dynamic-argument"},
    {"echo $*", kNo, "dynamic-argument"}, {"echo $?", kNo, "dynamic-argument"},
    {"echo $#", kNo, "dynamic-argument"}, {"echo $$", kNo, "dynamic-argument"},
    {"echo $!", kNo, "dynamic-argument"}, {"echo $-", kNo, "dynamic-argument"},
    {"echo $_x", kNo, "dynamic-argument"}, {"echo $((1+2))", kNo, "dynamic-argument"},
    {"echo $[1+2]", kNo, "dynamic-argument"}, {"echo \"$HOME\"", kNo, "dynamic-argument"},
    {"echo \"${x}\"", kNo, "dynamic-argument"}, {"echo \"$((1))\"", kNo, "dynamic-argument"},
    {"echo \"a $1 b\"", kNo, "dynamic-argument"}, {"echo $", kNo, "dynamic-argument"},
    {"echo \"$\"", kNo, "dynamic-argument"}, {"echo a$", kNo, "dynamic-argument"},
    {"echo \"a $ b\"", kNo, "dynamic-argument"}, {"echo \"$'x'\"", kNo, "dynamic-argument"},
    {"$", kNo, "dynamic-argument"}, {"$ ls", kNo, "dynamic-argument"},
    {"ls $HOME/x", kNo, "dynamic-argument"}, {"echo $x$(y)", kNo, "dynamic-argument"},
    // Dynamic executables.
    {"$(which ls)", kNo, "dynamic-executable"}, {"$(which ls) -la", kNo, "dynamic-executable"},
    {"`which ls`", kNo, "dynamic-executable"}, {"$CMD arg", kNo, "dynamic-executable"},
    {"${CMD} arg", kNo, "dynamic-executable"}, {"\"$CMD\" arg", kNo, "dynamic-executable"},
    {"\"$(which ls)\"", kNo, "dynamic-executable"}, {"a$(x)", kNo, "dynamic-executable"},
    {"x`y`", kNo, "dynamic-executable"}, {"ls && $CMD", kNo, "dynamic-executable"},
    {"ls | $X", kNo, "dynamic-executable"}, {"$((1+2))", kNo, "dynamic-executable"},
    {"$1", kNo, "dynamic-executable"}, {"$@", kNo, "dynamic-executable"},
    {"FOO=1 $CMD", kNo, "dynamic-executable"}, {"FOO$x=1 ls", kNo, "dynamic-executable"},
    {"/usr/bin/$X", kNo, "dynamic-executable"},
    // Job control: bash runs a command word starting with % as fg, however it is quoted.
    {"%1", kNo, "job-control"}, {"%", kNo, "job-control"}, {"'%vim'", kNo, "job-control"},
    {"\\%1", kNo, "job-control"}, {"ls && %1", kNo, "job-control"},
    {"FOO=1 %x", kNo, "job-control"}, {"echo %1", kOk, "<echo> <%1>"}, {"x%1", kOk, "<x%1>"},
    // ANSI-C quoting and locale strings.
    {"echo $'a\\nb'", kNo, "ansi-c-quoting"}, {"$'ls'", kNo, "ansi-c-quoting"},
    {"echo a$'b'", kNo, "ansi-c-quoting"}, {"FOO=$'x' ls", kNo, "ansi-c-quoting"},
    {"echo $\"hi\"", kNo, "locale-string"}, {"$\"ls\"", kNo, "locale-string"},
    // Syntax errors.
    {"; ls", kNo, "syntax-error"}, {";", kNo, "syntax-error"},
    {"ls ;; echo x", kNo, "syntax-error"}, {"ls;;", kNo, "syntax-error"},
    {"ls; ; echo", kNo, "syntax-error"}, {"ls ;& x", kNo, "syntax-error"},
    {"ls ;;& x", kNo, "syntax-error"}, {"ls\n;", kNo, "syntax-error"},
    {"ls | | x", kNo, "syntax-error"}, {"ls | |", kNo, "syntax-error"},
    {"| ls", kNo, "syntax-error"}, {"ls\n| x", kNo, "syntax-error"},
    {"ls || || x", kNo, "syntax-error"}, {"&& ls", kNo, "syntax-error"},
    {"|| ls", kNo, "syntax-error"}, {"ls && && x", kNo, "syntax-error"},
    {"ls && ; x", kNo, "syntax-error"}, {"ls && | x", kNo, "syntax-error"},
    {"ls | && x", kNo, "syntax-error"}, {"& ls", kNo, "syntax-error"},
    {"ls &&& x", kNo, "syntax-error"}, {"|& ls", kNo, "syntax-error"},
    {"echo 'abc", kNo, "syntax-error"}, {"echo \"abc", kNo, "syntax-error"},
    {"echo \"abc\\\"", kNo, "syntax-error"}, {"echo \"abc\\", kNo, "syntax-error"},
    {"echo abc\\", kNo, "syntax-error"}, {"'", kNo, "syntax-error"}, {"\"", kNo, "syntax-error"},
    {"\\", kNo, "syntax-error"}, {"ls\r", kNo, "syntax-error"}, {"ls\r\n", kNo, "syntax-error"},
    {"ls \r", kNo, "syntax-error"}, {"echo a\rb", kNo, "syntax-error"},
    {"\rls", kNo, "syntax-error"},
    // Trailing operators.
    {"ls &&", kNo, "unable to parse command"}, {"ls ||", kNo, "unable to parse command"},
    {"ls |", kNo, "unable to parse command"}, {"ls && ", kNo, "unable to parse command"},
    {"ls &&\n", kNo, "unable to parse command"}, {"ls &&\n\n  ", kNo, "unable to parse command"},
    {"ls | # c", kNo, "unable to parse command"}, {"ls && # c\n", kNo, "unable to parse command"},
    {"a | b |", kNo, "unable to parse command"}, {"a; b &&", kNo, "unable to parse command"},
    // Background.
    {"ls &", kNo, "background"}, {"ls & echo", kNo, "background"}, {"ls&", kNo, "background"},
    {"sleep 1 & wait", kNo, "background"}, {"ls && x &", kNo, "background"},
    {"ls & ;", kNo, "background"}, {"FOO=1 &", kNo, "background"},
    // Line continuations.
    {"ls \\\n-la", kNo, "line-continuation"}, {"ls\\\n", kNo, "line-continuation"},
    {"echo \"a\\\nb\"", kNo, "line-continuation"}, {"\\\nls", kNo, "line-continuation"},
    {"ls # c \\\necho", kNo, "line-continuation"}, {"ls &&\\\n echo", kNo, "line-continuation"},
    {"ls && \\\n echo", kNo, "line-continuation"}, {"FOO=a\\\nb ls", kNo, "line-continuation"},
    // Nothing to authorize.
    {"", kNo, "no commands to authorize"}, {" ", kNo, "no commands to authorize"},
    {"\t", kNo, "no commands to authorize"}, {"\n", kNo, "no commands to authorize"},
    {"\n\n \n", kNo, "no commands to authorize"}, {"# c", kNo, "no commands to authorize"},
    {"#", kNo, "no commands to authorize"},
    {"  # c\n# d\n", kNo, "no commands to authorize"},
    {"# $(x) > y", kNo, "no commands to authorize"},
    // NUL bytes.
    {"ls\0x"s, kNo, "nul-byte"}, {"\0"s, kNo, "nul-byte"}, {"echo 'a\0b'"s, kNo, "nul-byte"},
    {"echo \"a\0b\""s, kNo, "nul-byte"}, {"echo a\\\0"s, kNo, "nul-byte"},
    {"ls &&\0"s, kNo, "nul-byte"}, {"# c\0"s, kNo, "nul-byte"},
    {"$(x)\0"s, kNo, "dynamic-executable"}, {"ls > x\0"s, kNo, "redirect"},
    // The first construct in reading order wins.
    {"echo $(x) > y", kNo, "command-substitution"}, {"ls > $(x)", kNo, "redirect"},
    {"ls & $(x)", kNo, "background"}, {"cat <<EOF $(x)", kNo, "heredoc"},
    {"$(x) && (y)", kNo, "dynamic-executable"}, {"(ls) && $(x)", kNo, "subshell"},
    {"echo 'unterminated $(x)", kNo, "syntax-error"},
    {"echo $(x) 'unterminated", kNo, "command-substitution"},
    {"ls \\\n && $(x)", kNo, "line-continuation"}, {"ls && )", kNo, "syntax-error"},
    {"if $(x)", kNo, "if"}, {"{ $(x); }", kNo, "group"},
    {"echo $HOME; rm -rf / &", kNo, "dynamic-argument"},
    {"ls; ls &", kNo, "background"}, {"ls ;; $(x)", kNo, "syntax-error"},
    {"echo \"$x\" `y`", kNo, "dynamic-argument"}, {"ls < <(x)", kNo, "redirect"},
    {"FOO=1 && $(x)", kNo, "variable-assignment"},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(ShellAnalysis, AnalyzeTest, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row>& row) {
                           return "row" + std::to_string(row.index);
                         });

TEST(ShellAnalysisTest, OpsAndArgv) {
  const ShellAnalysis a = AnalyzeShellCommand("ls -la | grep x && echo hi || true; pwd\nid");
  ASSERT_TRUE(a.ok);
  ASSERT_EQ(a.parts.size(), 5u);
  EXPECT_EQ(a.parts[0].op, ChainOp::kFirst);
  EXPECT_EQ(a.parts[1].op, ChainOp::kAnd);
  EXPECT_EQ(a.parts[2].op, ChainOp::kOr);
  EXPECT_EQ(a.parts[3].op, ChainOp::kSeq);
  EXPECT_EQ(a.parts[4].op, ChainOp::kSeq);
  ASSERT_EQ(a.parts[0].pipeline.size(), 2u);
  EXPECT_EQ(a.parts[0].pipeline[0].Argv(), (std::vector<std::string>{"ls", "-la"}));
  EXPECT_EQ(a.parts[0].pipeline[1].Argv(), (std::vector<std::string>{"grep", "x"}));
  EXPECT_FALSE(a.parts[0].pipeline[0].Expands());
  EXPECT_STREQ(ChainOpText(ChainOp::kFirst), "");
  EXPECT_STREQ(ChainOpText(ChainOp::kAnd), "&&");
  EXPECT_STREQ(ChainOpText(ChainOp::kOr), "||");
  EXPECT_STREQ(ChainOpText(ChainOp::kSeq), ";");

  const ShellAnalysis g = AnalyzeShellCommand("ls a *.txt");
  ASSERT_TRUE(g.ok);
  EXPECT_TRUE(g.parts[0].pipeline[0].Expands());
  EXPECT_FALSE(g.parts[0].pipeline[0].words[1].expands);
  EXPECT_TRUE(g.parts[0].pipeline[0].words[2].expands);
}

// QuoteShellWord: expected outputs.
struct QuoteRow {
  std::string word;
  std::string quoted;
};
class QuoteTest : public ::testing::TestWithParam<QuoteRow> {};

TEST_P(QuoteTest, Table) { EXPECT_EQ(QuoteShellWord(GetParam().word), GetParam().quoted); }

const QuoteRow kQuoteRows[] = {
    {"", "''"},
    {"ls", "ls"},
    {"-la", "-la"},
    {"/usr/bin/ls", "/usr/bin/ls"},
    {"--opt=val", "--opt=val"},
    {"x:y,z@%+._-/", "x:y,z@%+._-/"},
    {"a b", "'a b'"},
    {"it's", "'it'\"'\"'s'"},
    {"'", "''\"'\"''"},
    {"*.txt", "'*.txt'"},
    {"a?", "'a?'"},
    {"[x]", "'[x]'"},
    {"~", "'~'"},
    {"~/x", "'~/x'"},
    {"=x", "'=x'"},
    {"FOO=1", "'FOO=1'"},
    {"a+=1", "'a+=1'"},
    {"_=", "'_='"},
    {"a=", "'a='"},
    {"1a=2", "1a=2"},
    {"if", "'if'"},
    {"then", "'then'"},
    {"in", "'in'"},
    {"time", "'time'"},
    {"function", "'function'"},
    {"iff", "iff"},
    {"$HOME", "'$HOME'"},
    {"$(x)", "'$(x)'"},
    {"a\nb", "'a\nb'"},
    {"a\\b", "'a\\b'"},
    {"{}", "'{}'"},
    {"{a,b}", "'{a,b}'"},
    {"#", "'#'"},
    {"a#", "'a#'"},
    {"!", "'!'"},
    {"\xc3\xa9", "'\xc3\xa9'"},
    {"a;b", "'a;b'"},
    {"\"", "'\"'"},
    {"`", "'`'"},
};
INSTANTIATE_TEST_SUITE_P(ShellAnalysis, QuoteTest, ::testing::ValuesIn(kQuoteRows),
                         [](const ::testing::TestParamInfo<QuoteRow>& row) {
                           return "quote" + std::to_string(row.index);
                         });

// Words that must survive QuoteShellWord -> AnalyzeShellCommand unchanged, as the command word
// and as an argument.
std::vector<std::string> TrickyWords() {
  std::vector<std::string> words = {
      "",         "ls",    "a b",  "'",      "''",     "\"",    "\\",       "\\\\",   "$",
      "$HOME",    "$(x)",  "`x`",  "${x}",   "*",      "?",     "[a]",      "{a,b}",  "{1..3}",
      "~",        "~/x",   "a=~",  "FOO=1",  "a+=b",   "=",     "=x",       "#",      "#x",
      "a#b",      "!",     "!x",   "if",     "then",   "{",     "}",        "[[",     "]]",
      "((",       "(",     ")",    ";",      ";;",     "&",     "&&",       "|",      "||",
      "<",        "<<EOF", ">",    "2>&1",   "\n",     "a\nb",  "\\\n",     "\r",     "\r\n",
      "\t",       " ",     "  ",   "'\"'",   "a'b\"c", "'\\''", "$'x'",     "$\"x\"", "\xff",
      "\xc3\xa9", "--",    "-",    "a=(1)",  "a[0]=1", "f()",   "%1",       "@(x)",   "x:~",
      "time",     "in",    "esac", "coproc", "select", "until", "function", "\x7f",
  };
  for (int b = 1; b < 256; ++b) {
    const char c = static_cast<char>(b);
    words.push_back(std::string(1, c));
    words.push_back("a" + std::string(1, c) + "b");
    words.push_back(std::string(3, c));
    words.push_back(std::string(1, c) + "x");
    words.push_back("x=" + std::string(1, c));
  }
  return words;
}

TEST(ShellAnalysisTest, QuoteRoundTripsEveryByte) {
  for (const std::string& w : TrickyWords()) {
    const std::string q = QuoteShellWord(w);
    SCOPED_TRACE("word: \"" + Escape(w) + "\" quoted: " + Escape(q));
    struct Command {
      std::string text;
      size_t index;  // of w in the first segment's words
      size_t words;  // in the first segment
    };
    const Command commands[] = {
        {q, 0, 1}, {"echo " + q, 1, 2}, {"echo " + q + " x", 1, 3}, {q + " | cat", 0, 1}};
    for (const auto& [command, index, count] : commands) {
      const ShellAnalysis a = AnalyzeShellCommand(command);
      if (index == 0 && !w.empty() && w[0] == '%') {
        EXPECT_EQ(a.reason, "job-control");  // bash runs '%1' as fg %1: never a command word
        continue;
      }
      ASSERT_TRUE(a.ok) << a.reason << " for " << Escape(command);
      ASSERT_EQ(a.parts.size(), 1u);
      const ShellSegment& seg = a.parts[0].pipeline[0];
      EXPECT_TRUE(seg.assignments.empty());
      ASSERT_EQ(seg.words.size(), count);
      EXPECT_EQ(seg.words[index].text, w);
      EXPECT_FALSE(seg.words[index].expands);
    }
  }
}

TEST(ShellAnalysisTest, QuoteOfNulIsRefused) {
  const std::string w("a\0b", 3);
  EXPECT_EQ(AnalyzeShellCommand(QuoteShellWord(w)).reason, "nul-byte");
}

TEST(ShellAnalysisTest, RenderRewritesArgvZero) {
  struct Case {
    std::string input;
    std::string rendered;
  };
  const Case cases[] = {
      {"ls -la | grep x && echo hi", "/r/ls -la | /r/grep x && /r/echo hi"},
      {"ls; echo hi", "/r/ls; /r/echo hi"},
      {"ls\necho hi", "/r/ls; /r/echo hi"},
      {"a || b", "/r/a || /r/b"},
      {"echo 'a b' \"c'd\"", "/r/echo 'a b' 'c'\"'\"'d'"},
      {"ls *.txt ~ {a,b}", "/r/ls '*.txt' '~' '{a,b}'"},
      {"FOO='a b' BAR= ls", "FOO='a b' BAR='' /r/ls"},
      {"X=~ Y+=1 ls", "X='~' Y+=1 /r/ls"},
      {"echo if FOO=1", "/r/echo 'if' 'FOO=1'"},
      {"find . -exec rm {} \\;", "/r/find . -exec /r/rm '{}' ';'"},
  };
  for (const Case& c : cases) {
    ShellAnalysis a = AnalyzeShellCommand(c.input);
    ASSERT_TRUE(a.ok) << c.input;
    for (auto& part : a.parts) {
      for (auto& seg : part.pipeline) {
        for (auto& w : seg.words) {
          if (&w == &seg.words[0] || w.text == "rm") w.text = "/r/" + w.text;
        }
      }
    }
    EXPECT_EQ(RenderShellCommand(a.parts), c.rendered) << c.input;
  }
}

TEST(ShellAnalysisTest, RenderEdgeCases) {
  EXPECT_EQ(RenderShellCommand({}), "");
  std::vector<ShellChainPart> parts(2);
  parts[0].op = ChainOp::kAnd;  // ignored for the first part
  parts[0].pipeline.push_back(ShellSegment{{}, {ShellWord{"", false}, ShellWord{"a b", true}}, {}});
  parts[1].op = ChainOp::kFirst;  // a later kFirst renders as "; "
  parts[1].pipeline.push_back(ShellSegment{{}, {ShellWord{"if", false}}, {}});
  EXPECT_EQ(RenderShellCommand(parts), "'' 'a b'; 'if'");
}

// Inputs of 1 MiB (those that build half a million segments: 256 KiB, to keep the test quick)
// must each be decided in one linear pass.
TEST(ShellAnalysisTest, LargeInputsAreLinear) {
  auto repeat = [](std::string_view unit, size_t n = 1 << 20) {
    std::string s;
    while (s.size() < n) s.append(unit);
    return s;
  };
  struct Case {
    std::string input;
    std::string reason;  // "" = accepted
  };
  const Case cases[] = {
      {repeat("a|"), "unable to parse command"},
      {repeat("a|", 1 << 18) + "a", ""},
      {repeat("a;", 1 << 18), ""},
      {repeat("a&&"), "unable to parse command"},
      {repeat("a "), ""},
      {repeat("(("), "arithmetic"},
      {repeat("( "), "subshell"},
      {repeat(")"), "syntax-error"},
      {repeat("'"), ""},
      {repeat("'") + "'", "syntax-error"},
      {repeat("\""), ""},
      {repeat("\\"), ""},
      {repeat("$"), "dynamic-executable"},
      {repeat("{"), ""},
      {repeat("{,}"), ""},
      {repeat("["), ""},
      {repeat("\n"), "no commands to authorize"},
      {repeat("#"), "no commands to authorize"},
      {repeat("x=1 "), "variable-assignment"},
      {"echo " + repeat("\"a b\\\" c\""), ""},
      {"echo '" + repeat("x") + "'", ""},
      {repeat("f "), ""},
      {std::string(1 << 20, '\0'), "nul-byte"},
      {repeat("a\n", 1 << 18), ""},
  };
  // No absolute time limits (CI machines are noisy): every case is compared with the heaviest
  // linear case of the same run (half a million segments, all allocated). Quadratic or
  // exponential work on 1 MiB would be orders of magnitude above it.
  auto time_of = [](const std::string& input, ShellAnalysis* out) {
    const auto start = std::chrono::steady_clock::now();
    *out = AnalyzeShellCommand(input);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  ShellAnalysis ref_result;
  double ref = 0;
  for (int i = 0; i < 3; ++i) ref = std::max(ref, time_of(repeat("a;", 1 << 18), &ref_result));
  for (const Case& c : cases) {
    ShellAnalysis a;
    const double t = time_of(c.input, &a);
    EXPECT_EQ(a.reason, c.reason) << Escape(c.input.substr(0, 16));
    EXPECT_LT(t, 10 * ref + 0.05) << Escape(c.input.substr(0, 16)) << ": " << t << " s vs " << ref
                                  << " s for the reference";
  }
}

}  // namespace
}  // namespace sandrun::policy
