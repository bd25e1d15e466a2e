#include "runner/policy/shell_analysis.h"

#include <cstring>
#include <utility>

namespace sandrun::policy {
namespace {

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsOneOf(char c, std::string_view set) { return set.find(c) != std::string_view::npos; }

// Words reserved at command position, and what an unquoted one there is refused as.
struct Reserved {
  std::string_view word;
  std::string_view reason;
};
constexpr Reserved kReserved[] = {
    {"if", kShellIf},
    {"for", kShellFor},
    {"while", kShellWhile},
    {"until", kShellWhile},
    {"case", kShellCase},
    {"select", kShellSelect},
    {"coproc", kShellCoproc},
    {"time", kShellTime},
    {"function", kShellFunctionDefinition},
    {"{", kShellGroup},
    {"[[", kShellTestExpression},
    {"!", kShellNegation},
    // Only meaningful inside a compound command we never accept: here they are stray.
    {"then", kShellSyntaxError},
    {"else", kShellSyntaxError},
    {"elif", kShellSyntaxError},
    {"fi", kShellSyntaxError},
    {"do", kShellSyntaxError},
    {"done", kShellSyntaxError},
    {"esac", kShellSyntaxError},
    {"in", kShellSyntaxError},
    {"}", kShellSyntaxError},
    {"]]", kShellSyntaxError},
};

const Reserved* FindReserved(std::string_view word) {
  for (const Reserved& r : kReserved) {
    if (r.word == word) return &r;
  }
  return nullptr;
}

// NAME= or NAME+= at the start of `text`: the length of the prefix up to and including '=', or 0.
size_t AssignmentPrefix(std::string_view text) {
  if (text.empty() || !IsNameStart(text[0])) return 0;
  size_t i = 1;
  while (i < text.size() && IsNameChar(text[i])) ++i;
  if (i < text.size() && text[i] == '=') return i + 1;
  if (i + 1 < text.size() && text[i] == '+' && text[i + 1] == '=') return i + 2;
  return 0;
}

// A word being lexed, and what was learnt about it on the way.
struct Word {
  std::string text;
  bool expands = false;
  bool assignment = false;  // starts with an unquoted NAME= / NAME+=
  bool plain = true;        // no quote, escape or expansion anywhere (reserved-word candidate)

  void Clear() {
    text.clear();  // keeps the capacity: one buffer serves every word
    expands = assignment = false;
    plain = true;
  }
};

enum class State {
  kNone,  // between commands: at the start, after `;` or a newline
  kNeed,  // after `&&`, `||` or `|`: a command must follow
  kIn,    // inside a simple command
};

// Two passes over the same grammar: the first decides, allocating nothing per command (so a
// refused input of any size is cheap), the second builds the result of an accepted input.
class Analyzer {
 public:
  explicit Analyzer(std::string_view command) : s_(command) {
    const void* nul = std::memchr(s_.data(), '\0', s_.size());
    if (nul != nullptr) {
      // Lex only what precedes the NUL; reaching that end reports the NUL itself.
      s_ = s_.substr(0, static_cast<size_t>(static_cast<const char*>(nul) - s_.data()));
      truncated_ = true;
    }
  }

  ShellAnalysis Run() {
    ShellAnalysis out;
    if (!Parse()) {
      out.reason = std::string(reason_);
      return out;
    }
    parts_.reserve(part_count_);
    build_ = true;
    pos_ = 0;
    state_ = State::kNone;
    seg_words_ = seg_assignments_ = 0;
    part_count_ = 0;
    if (!Parse()) {  // cannot happen: the same input, the same decisions
      out.reason = std::string(reason_);
      return out;
    }
    out.ok = true;
    out.parts = std::move(parts_);
    return out;
  }

 private:
  char Peek(size_t k) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }
  bool Refuse(std::string_view reason) {
    reason_ = reason;
    return false;
  }
  // Refusals caused by running out of input blame the NUL when the input was cut at one.
  bool RefuseAtEnd(std::string_view reason) { return Refuse(truncated_ ? kShellNulByte : reason); }

  bool Parse();
  bool SkipComment();
  bool LexWord(bool command_pos, Word* w);
  bool LexDoubleQuoted(bool command_word, Word* w);
  bool RefuseDollar(bool command_word, bool in_double_quotes);
  void AddToSegment(const Word& w);
  bool EndSegment();
  void EndPart(ChainOp next);
  void FlagBraceExpansion(Word* w, size_t open, size_t close) const;

  std::string_view s_;
  bool truncated_ = false;
  bool build_ = false;  // second pass
  size_t pos_ = 0;
  std::string_view reason_;
  State state_ = State::kNone;
  Word word_;  // the word being lexed
  // The current segment and part, counted in both passes.
  size_t seg_words_ = 0;
  size_t seg_assignments_ = 0;
  size_t part_count_ = 0;
  // Built by the second pass.
  ShellSegment seg_;
  ShellChainPart part_;
  std::vector<ShellChainPart> parts_;
};

bool Analyzer::Parse() {
  while (pos_ < s_.size()) {
    const char c = s_[pos_];
    switch (c) {
      case ' ':
      case '\t':
        ++pos_;
        break;
      case '\r':
        return Refuse(kShellSyntaxError);
      case '\n':
        if (state_ == State::kIn) {
          if (!EndSegment()) return false;
          EndPart(ChainOp::kSeq);
          state_ = State::kNone;
        }
        ++pos_;  // kNone: an empty line; kNeed: continues after && || |
        break;
      case '#':  // only reached at the start of a word
        if (!SkipComment()) return false;
        break;
      case ';':
        // `;;`, `;&` and `;;&` end case items; a `;` with no command before it is stray.
        if (state_ != State::kIn || Peek(1) == ';' || Peek(1) == '&') {
          return Refuse(kShellSyntaxError);
        }
        if (!EndSegment()) return false;
        EndPart(ChainOp::kSeq);
        state_ = State::kNone;
        ++pos_;
        break;
      case '&':
        if (Peek(1) == '>') return Refuse(kShellRedirect);  // &> &>> (valid anywhere)
        if (state_ != State::kIn) return Refuse(kShellSyntaxError);
        if (Peek(1) != '&') return Refuse(kShellBackground);
        if (!EndSegment()) return false;
        EndPart(ChainOp::kAnd);
        state_ = State::kNeed;
        pos_ += 2;
        break;
      case '|':
        if (state_ != State::kIn) return Refuse(kShellSyntaxError);
        if (Peek(1) == '&') return Refuse(kShellRedirect);  // |& is 2>&1 |
        if (!EndSegment()) return false;
        if (Peek(1) == '|') {
          EndPart(ChainOp::kOr);
          pos_ += 2;
        } else {
          ++pos_;
        }
        state_ = State::kNeed;
        break;
      case '<':
        if (Peek(1) == '<') return Refuse(Peek(2) == '<' ? kShellHereString : kShellHeredoc);
        return Refuse(Peek(1) == '(' ? kShellProcessSubstitution : kShellRedirect);
      case '>':
        return Refuse(Peek(1) == '(' ? kShellProcessSubstitution : kShellRedirect);
      case '(':
        if (state_ != State::kIn) return Refuse(Peek(1) == '(' ? kShellArithmetic : kShellSubshell);
        if (seg_assignments_ == 0 && seg_words_ == 1) {
          // `name ( )`: a function definition; anything else after one word is a syntax error.
          size_t i = pos_ + 1;
          while (i < s_.size() && (s_[i] == ' ' || s_[i] == '\t')) ++i;
          if (i < s_.size() && s_[i] == ')') return Refuse(kShellFunctionDefinition);
        }
        return Refuse(kShellSyntaxError);
      case ')':
        return Refuse(kShellSyntaxError);
      default: {
        const bool command_pos = seg_words_ == 0;
        word_.Clear();
        if (!LexWord(command_pos, &word_)) return false;
        if (command_pos && !word_.assignment) {
          if (word_.plain) {
            if (const Reserved* r = FindReserved(word_.text)) return Refuse(r->reason);
          }
          // bash runs `%job` (quoted or not) as `fg %job`.
          if (!word_.text.empty() && word_.text[0] == '%') return Refuse(kShellJobControl);
        }
        state_ = State::kIn;
        AddToSegment(word_);
        break;
      }
    }
  }
  if (truncated_) return Refuse(kShellNulByte);
  switch (state_) {
    case State::kNeed:
      return Refuse(kShellUnableToParse);
    case State::kIn:
      if (!EndSegment()) return false;
      EndPart(ChainOp::kSeq);
      break;
    case State::kNone:
      break;
  }
  if (part_count_ == 0) return Refuse(kShellNoCommands);
  return true;
}

// From a `#` to the end of the line (the newline itself is left for the caller).
bool Analyzer::SkipComment() {
  while (pos_ < s_.size() && s_[pos_] != '\n') {
    // bash and dash end the comment there, but a trailing backslash reads as a continuation to
    // a human (and to OpenClaw's raw check): refuse rather than pick one reading.
    if (s_[pos_] == '\\' && Peek(1) == '\n') return Refuse(kShellLineContinuation);
    ++pos_;
  }
  return true;
}

void Analyzer::AddToSegment(const Word& w) {
  const bool assignment = seg_words_ == 0 && w.assignment;
  if (build_) {
    if (assignment) {
      seg_.assignments.push_back(w.text);
    } else {
      seg_.words.push_back(ShellWord{w.text, w.expands});
    }
  }
  ++(assignment ? seg_assignments_ : seg_words_);
}

bool Analyzer::EndSegment() {
  if (seg_words_ == 0) return Refuse(kShellVariableAssignment);  // only assignments
  if (build_) {
    part_.pipeline.push_back(std::move(seg_));
    seg_ = ShellSegment{};
  }
  seg_words_ = seg_assignments_ = 0;
  return true;
}

void Analyzer::EndPart(ChainOp next) {
  if (build_) {
    parts_.push_back(std::move(part_));
    part_ = ShellChainPart{};
    part_.op = next;
  }
  ++part_count_;
}

// `$` at pos_ (unquoted, or inside double quotes): always a refusal; which one depends on what
// follows and on whether it sits in the command word.
bool Analyzer::RefuseDollar(bool command_word, bool in_double_quotes) {
  const char next = Peek(1);
  if (!in_double_quotes && next == '\'') return Refuse(kShellAnsiCQuoting);
  if (!in_double_quotes && next == '"') return Refuse(kShellLocaleString);
  std::string_view kind;
  if (next == '(') {
    kind = Peek(2) == '(' ? kShellDynamicArgument : kShellCommandSubstitution;  // $(( )) / $( )
  } else if (next == '{' || next == '[' || IsNameChar(next) || IsOneOf(next, "@*#?-$!")) {
    kind = kShellDynamicArgument;  // ${..} $[..] $NAME $1 $@ $* $# $? $- $$ $!
  } else {
    // A lone `$` is literal to sh, but nothing is gained by accepting it.
    return Refuse(kShellDynamicArgument);
  }
  return Refuse(command_word ? kShellDynamicExecutable : kind);
}

bool Analyzer::LexDoubleQuoted(bool command_word, Word* w) {
  ++pos_;  // the opening quote
  for (;;) {
    if (pos_ >= s_.size()) return RefuseAtEnd(kShellSyntaxError);  // unterminated
    const char c = s_[pos_];
    switch (c) {
      case '"':
        ++pos_;
        return true;
      case '\\': {
        if (pos_ + 1 >= s_.size()) return RefuseAtEnd(kShellSyntaxError);
        const char next = s_[pos_ + 1];
        if (next == '\n') return Refuse(kShellLineContinuation);
        if (next == '$' || next == '`' || next == '"' || next == '\\') {
          w->text.push_back(next);
          pos_ += 2;
        } else {
          w->text.push_back('\\');  // literal; the next byte is read on its own
          ++pos_;
        }
        break;
      }
      case '$':
        return RefuseDollar(command_word, /*in_double_quotes=*/true);
      case '`':
        return Refuse(command_word ? kShellDynamicExecutable : kShellCommandSubstitution);
      default: {
        // Copy the run of ordinary bytes at once.
        size_t end = pos_ + 1;
        while (end < s_.size() && s_[end] != '"' && s_[end] != '\\' && s_[end] != '$' &&
               s_[end] != '`') {
          ++end;
        }
        w->text.append(s_.substr(pos_, end - pos_));
        pos_ = end;
        break;
      }
    }
  }
}

void Analyzer::FlagBraceExpansion(Word* w, size_t open, size_t close) const {
  const std::string_view inner = std::string_view(w->text).substr(open + 1, close - open - 1);
  if (inner.find(',') != std::string_view::npos || inner.find("..") != std::string_view::npos) {
    w->expands = true;
  }
}

// One word from pos_ up to an unquoted metacharacter. `command_pos`: no command word yet in this
// segment (the word is an assignment or the command word).
bool Analyzer::LexWord(bool command_pos, Word* w) {
  const size_t start = pos_;
  // Assignment prefix: kName0 nothing yet, kName inside an unquoted NAME, kAssign after the
  // `=` of NAME= / NAME+=, kNot when the word cannot be an assignment.
  enum { kName0, kName, kAssign, kNot } as = kName0;
  char last_unquoted = '\0';           // the previous byte when it was an unquoted literal
  size_t bracket = std::string::npos;  // text index of the first unquoted `[`
  size_t brace_open = std::string::npos, brace_close = std::string::npos;  // unquoted { and }
  auto not_name = [&] {
    if (as != kAssign) as = kNot;
    last_unquoted = '\0';
  };
  bool in_word = true;
  while (in_word && pos_ < s_.size()) {
    const char c = s_[pos_];
    switch (c) {
      case ' ':
      case '\t':
      case '\n':
      case ';':
      case '&':
      case '|':
      case '<':
      case '>':
      case ')':
        in_word = false;  // a metacharacter ends the word; the caller handles it
        break;
      case '(':
        // `a=(1 2)`: a bash array; elsewhere the caller refuses the `(`.
        if (as == kAssign && last_unquoted == '=') {
          return Refuse(command_pos ? kShellArrayAssignment : kShellSyntaxError);
        }
        in_word = false;
        break;
      case '\r':
        return Refuse(kShellSyntaxError);
      case '\\': {
        if (pos_ + 1 >= s_.size()) return RefuseAtEnd(kShellSyntaxError);  // escape at the end
        if (s_[pos_ + 1] == '\n') return Refuse(kShellLineContinuation);
        w->text.push_back(s_[pos_ + 1]);
        w->plain = false;
        not_name();
        pos_ += 2;
        break;
      }
      case '\'': {
        const void* close = std::memchr(s_.data() + pos_ + 1, '\'', s_.size() - pos_ - 1);
        if (close == nullptr) return RefuseAtEnd(kShellSyntaxError);  // unterminated
        const size_t end = static_cast<size_t>(static_cast<const char*>(close) - s_.data());
        w->text.append(s_.substr(pos_ + 1, end - pos_ - 1));
        w->plain = false;
        not_name();
        pos_ = end + 1;
        break;
      }
      case '"':
        w->plain = false;
        if (!LexDoubleQuoted(command_pos && as != kAssign, w)) return false;
        not_name();
        break;
      case '$':
        return RefuseDollar(command_pos && as != kAssign, /*in_double_quotes=*/false);
      case '`':
        return Refuse(command_pos && as != kAssign ? kShellDynamicExecutable
                                                   : kShellCommandSubstitution);
      default:
        if (as == kName0) {
          as = IsNameStart(c) ? kName : kNot;
        } else if (as == kName && !IsNameChar(c)) {
          if (c == '=') {
            as = kAssign;
          } else if (c == '+' && Peek(1) == '=') {
            w->text.push_back('+');
            ++pos_;
            as = kAssign;
            last_unquoted = '=';
            w->text.push_back('=');
            ++pos_;
            continue;
          } else if (c == '[' && command_pos) {
            return Refuse(kShellArrayAssignment);  // a[0]=x
          } else {
            as = kNot;
          }
        }
        switch (c) {
          case '*':
          case '?':
            w->expands = true;
            break;
          case '[':
            if (bracket == std::string::npos) bracket = w->text.size();
            break;
          case '{':
            if (brace_open == std::string::npos) brace_open = w->text.size();
            break;
          case '}':
            if (brace_open != std::string::npos) brace_close = w->text.size();
            break;
          case '~':
            if (pos_ == start ||
                (as == kAssign && (last_unquoted == '=' || last_unquoted == ':'))) {
              w->expands = true;
            }
            break;
          default:
            break;
        }
        w->text.push_back(c);
        last_unquoted = c;
        ++pos_;
        break;
    }
  }
  w->assignment = as == kAssign;
  if (bracket != std::string::npos && w->text.find(']', bracket + 1) != std::string::npos) {
    w->expands = true;  // [abc] (a lone `[`, as in `[ -f x ]`, stays literal)
  }
  if (brace_close != std::string::npos) FlagBraceExpansion(w, brace_open, brace_close);
  return true;
}

}  // namespace

std::vector<std::string> ShellSegment::Argv() const {
  std::vector<std::string> argv;
  argv.reserve(words.size());
  for (const ShellWord& w : words) argv.push_back(w.text);
  return argv;
}

bool ShellSegment::Expands() const {
  for (const ShellWord& w : words) {
    if (w.expands) return true;
  }
  return false;
}

ShellAnalysis AnalyzeShellCommand(std::string_view command) { return Analyzer(command).Run(); }

std::string QuoteShellWord(std::string_view word) {
  bool bare = !word.empty() && word[0] != '=' && AssignmentPrefix(word) == 0 &&
              FindReserved(word) == nullptr;
  for (size_t i = 0; bare && i < word.size(); ++i) {
    const char c = word[i];
    bare = IsNameChar(c) || IsOneOf(c, "@%+=:,./-");
  }
  if (bare) return std::string(word);
  std::string out;
  out.reserve(word.size() + 2);
  out.push_back('\'');
  for (char c : word) {
    if (c == '\'') {
      out.append("'\"'\"'");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

std::string RenderShellCommand(const std::vector<ShellChainPart>& parts) {
  std::string out;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (p > 0) {
      switch (parts[p].op) {
        case ChainOp::kAnd:
          out.append(" && ");
          break;
        case ChainOp::kOr:
          out.append(" || ");
          break;
        case ChainOp::kFirst:
        case ChainOp::kSeq:
          out.append("; ");
          break;
      }
    }
    const std::vector<ShellSegment>& pipeline = parts[p].pipeline;
    for (size_t s = 0; s < pipeline.size(); ++s) {
      if (s > 0) out.append(" | ");
      if (!pipeline[s].group.empty()) {
        // Spaced: bash, zsh and ksh read `((...))` (a group that starts with a group) as an
        // arithmetic command, which expands $(...) even inside single quotes.
        out.append("( ").append(pipeline[s].group).append(" )");
        continue;
      }
      bool first = true;
      auto space = [&] {
        if (!first) out.push_back(' ');
        first = false;
      };
      for (const std::string& a : pipeline[s].assignments) {
        space();
        const size_t eq = AssignmentPrefix(a);
        out.append(a, 0, eq);  // NAME= stays bare so it is still an assignment
        out.append(QuoteShellWord(std::string_view(a).substr(eq)));
      }
      for (const ShellWord& w : pipeline[s].words) {
        space();
        out.append(QuoteShellWord(w.text));
      }
    }
  }
  return out;
}

const char* ChainOpText(ChainOp op) {
  switch (op) {
    case ChainOp::kFirst:
      return "";
    case ChainOp::kAnd:
      return "&&";
    case ChainOp::kOr:
      return "||";
    case ChainOp::kSeq:
      return ";";
  }
  return "";
}

}  // namespace sandrun::policy
