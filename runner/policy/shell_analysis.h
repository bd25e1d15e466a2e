// The fail-closed shell analyser (SPEC §6 point 1, reference §5.1-§5.2 and §10): a hand-written
// lexer/parser for the subset of POSIX sh / bash the allowlist can reason about, and nothing more.
//
// Accepted: chains (`&&`, `||`, `;`, newline) of pipelines (`|`) of simple commands whose words
// are literal or quoted, optionally preceded by NAME=value assignments, with `#` comments at the
// start of a word running to the end of the line. Everything else is refused with a category
// naming the first construct met in reading order (the `kShell*` constants below). Anything the
// analyser does not fully understand is refused, never guessed.
//
// Lexing (bash rules):
//   - single quotes are literal (a newline inside is part of the word);
//   - in double quotes a backslash escapes only $ ` " \ (backslash-newline refuses as
//     line-continuation), any other backslash stays literal; `$` and ` inside refuse;
//   - outside quotes a backslash escapes any byte (the escaped byte is never special);
//     backslash-newline anywhere outside single quotes (comments included) refuses;
//   - `#` starts a comment only at the start of a word (`a#b` is literal);
//   - a newline separates commands like `;`; after `&&`, `||` or `|` it continues the command,
//     so `echo a &&` NEWLINE `echo b` is one chain; empty lines are fine; a trailing `;` is fine;
//   - a CR outside quotes refuses (syntax-error); a NUL byte anywhere refuses (nul-byte: sh
//     would cut the command there), unless something before it was refused first;
//   - NAME=value / NAME+=value words before the command word are assignments (text after
//     quote removal); after the command word they are plain words;
//   - reserved words (if, for, {, !, [[, ...) count only unquoted and at command position;
//   - a command word whose text starts with `%` refuses however it is quoted (bash runs
//     `%1` and `'%1'` as `fg %1`).
//
// Expansion flags (the word passes analysis, but ShellWord::expands is set, so it always needs
// approval; the flag over-approximates, never under-approximates, what bash expands):
//   - an unquoted `*` or `?`, or an unquoted `[` followed later in the word by a `]`;
//   - an unquoted `{` followed later by an unquoted `}` with a `,` or `..` (quoted or not)
//     between them (`{a,b}`, `{1..3}`; `{}` and `{x}` stay literal);
//   - an unquoted `~` at the start of the word, or right after an unquoted `=` or `:` in a word
//     that starts with NAME= (bash expands `x=~` even in argument position).
//
// Cost: one left-to-right pass, no recursion, O(n) time and memory for any bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandrun::policy {

// Refusal categories (ShellAnalysis::reason). The first group is OpenClaw 2026.9.6's (reference
// §10); the second names further constructs sandrun refuses.
inline constexpr std::string_view kShellHeredoc = "heredoc";         // cat <<EOF, <<-
inline constexpr std::string_view kShellHereString = "here-string";  // cat <<< x
inline constexpr std::string_view kShellRedirect = "redirect";       // > >> < 2>&1 &> |&
inline constexpr std::string_view kShellProcessSubstitution = "process-substitution";  // <(ls)
inline constexpr std::string_view kShellCommandSubstitution = "command-substitution";  // $(x) `x`
inline constexpr std::string_view kShellDynamicArgument = "dynamic-argument";  // $HOME $1 $((1))
inline constexpr std::string_view kShellDynamicExecutable = "dynamic-executable";  // $(which ls)
inline constexpr std::string_view kShellSyntaxError = "syntax-error";  // ; ls, ls ;; x, 'abc
inline constexpr std::string_view kShellUnableToParse = "unable to parse command";  // ls &&
inline constexpr std::string_view kShellBackground = "background";                  // ls &
inline constexpr std::string_view kShellSubshell = "subshell";                      // (ls)
inline constexpr std::string_view kShellGroup = "group";                            // { ls; }
inline constexpr std::string_view kShellIf = "if";
inline constexpr std::string_view kShellFor = "for";
inline constexpr std::string_view kShellWhile = "while";  // while and until
inline constexpr std::string_view kShellCase = "case";
inline constexpr std::string_view kShellFunctionDefinition = "function-definition";  // f() {..}
inline constexpr std::string_view kShellLineContinuation = "line-continuation";      // \ NEWLINE
inline constexpr std::string_view kShellNoCommands = "no commands to authorize";     // # only
inline constexpr std::string_view kShellVariableAssignment = "variable-assignment";  // FOO=1
// sandrun's own categories.
inline constexpr std::string_view kShellTestExpression = "test-expression";    // [[ -f x ]]
inline constexpr std::string_view kShellArithmetic = "arithmetic";             // ((i++))
inline constexpr std::string_view kShellNegation = "negation";                 // ! grep x
inline constexpr std::string_view kShellSelect = "select";                     // select x in a
inline constexpr std::string_view kShellCoproc = "coproc";                     // coproc ls
inline constexpr std::string_view kShellTime = "time";                         // time ls
inline constexpr std::string_view kShellAnsiCQuoting = "ansi-c-quoting";       // $'a\n'
inline constexpr std::string_view kShellLocaleString = "locale-string";        // $"msg"
inline constexpr std::string_view kShellArrayAssignment = "array-assignment";  // a=(1 2), a[0]=x
inline constexpr std::string_view kShellJobControl = "job-control";  // %1 (bash runs fg %1)
inline constexpr std::string_view kShellNulByte = "nul-byte";        // a NUL anywhere

struct ShellWord {
  std::string text;      // the word after quote removal and escape processing
  bool expands = false;  // unquoted glob, brace expansion or tilde (see above): needs approval
};

// One simple command of a pipeline.
struct ShellSegment {
  std::vector<std::string> assignments;  // leading NAME=value words, text after quote removal
  std::vector<ShellWord> words;          // argv words; non-empty in an accepted analysis
  // Set only by a rewrite, never by the analyser: a command line that RenderShellCommand writes
  // as a subshell `(group)` in place of the assignments and words (the rewritten payload of an
  // allowlisted `sh -c '...'`, which then runs without the shell).
  std::string group;

  std::vector<std::string> Argv() const;  // the words' texts
  bool Expands() const;                   // any word expands
};

// The operator before a chain part: kFirst for the first part, kSeq for `;` and newline.
enum class ChainOp { kFirst, kAnd, kOr, kSeq };

struct ShellChainPart {
  ChainOp op = ChainOp::kFirst;
  std::vector<ShellSegment> pipeline;  // >= 1 segment in an accepted analysis
};

struct ShellAnalysis {
  bool ok = false;
  std::string reason;                 // when !ok: the category (kShell*); "" when ok
  std::vector<ShellChainPart> parts;  // when ok: >= 1 part; empty when refused
};

// Analyses one command line (any bytes; meant for inputs up to a few MiB).
ShellAnalysis AnalyzeShellCommand(std::string_view command);

// Quotes one argv word for a POSIX shell only when needed. Returned as-is when non-empty, every
// byte is in [A-Za-z0-9_@%+=:,./-], it does not start with '=', it does not look like an
// assignment (NAME= or NAME+=) and it is not a reserved word (if, then, in, time, ...); else
// single-quoted, with each ' written as '"'"'. "" -> ''. For every word w without a NUL byte,
// AnalyzeShellCommand("echo " + QuoteShellWord(w)) gives back w with expands=false, and so does
// AnalyzeShellCommand(QuoteShellWord(w)) unless w starts with '%' (job-control).
std::string QuoteShellWord(std::string_view word);

// Rebuilds a command line from parts (e.g. with argv[0] replaced by a resolved path): each
// segment is its assignments (NAME= kept bare, the value quoted) and its words' texts, quoted
// with QuoteShellWord and joined by spaces, or `( group )` when the segment has a group (written
// as is: it is itself a rendered command line; the spaces keep `( ( a ) )` from reading as
// bash's arithmetic `((...))`); segments joined by " | "; parts joined by " && ",
// " || " or "; " per their op (the first part's op is ignored; a later kFirst renders as "; ").
// Without groups, analysing the result gives back the same assignments and argv, with every
// expands false (a group analyses as a subshell: refused).
std::string RenderShellCommand(const std::vector<ShellChainPart>& parts);

const char* ChainOpText(ChainOp op);  // "", "&&", "||", ";"

}  // namespace sandrun::policy
