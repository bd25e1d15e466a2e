// libFuzzer target for the fail-closed shell analyser: any bytes, taken both as a command line
// and as a recipe of shell tokens (so random input reaches deep into the grammar), must be
// accepted or refused with a non-empty category, never crash or hang. An accepted analysis has
// parts, segments and argv words; rendering it and analysing again gives the same structure.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runner/policy/shell_analysis.h"

namespace {

using sandrun::policy::AnalyzeShellCommand;
using sandrun::policy::ChainOp;
using sandrun::policy::ShellAnalysis;
using sandrun::policy::ShellChainPart;
using sandrun::policy::ShellSegment;

// Building blocks of command lines; the recipe picks one per byte.
constexpr std::string_view kPieces[] = {
    "ls",    " ", "\t",   "\n",       "-la", "&&", "||",       "|",          ";",    ";;",
    "&",     "'", "\"",   "\\",       "$",   "$(", "`",        "(",          ")",    "{",
    "}",     "[", "]",    "[[",       "((",  "<",  ">",        "<<",         "<<<",  "#",
    "~",     "*", "?",    ",",        "..",  "=",  "FOO=",     "a=(",        "if",   "then",
    "fi",    "!", "time", "function", "f()", "\r", "'a b'",    "\"x\\\"y\"", "\\\n", "$'x'",
    "{a,b}", "x", "2>&1", "echo",     "in",  "+=", "\xc3\xa9",
};

std::string Assemble(std::string_view recipe) {
  std::string text;
  for (char ch : recipe) {
    const auto c = static_cast<unsigned char>(ch);
    const size_t n = sizeof(kPieces) / sizeof(kPieces[0]);
    if (c >= 250) {
      text.push_back(ch);  // a raw byte now and then
      continue;
    }
    text.append(kPieces[c % n]);
  }
  return text;
}

void CheckSame(const ShellAnalysis& a, const ShellAnalysis& b) {
  if (!b.ok || a.parts.size() != b.parts.size()) std::abort();
  for (size_t p = 0; p < a.parts.size(); ++p) {
    const ShellChainPart& pa = a.parts[p];
    const ShellChainPart& pb = b.parts[p];
    if (pa.op != pb.op || pa.pipeline.size() != pb.pipeline.size()) std::abort();
    for (size_t s = 0; s < pa.pipeline.size(); ++s) {
      const ShellSegment& sa = pa.pipeline[s];
      const ShellSegment& sb = pb.pipeline[s];
      if (sa.assignments != sb.assignments || sa.Argv() != sb.Argv()) std::abort();
      if (sb.Expands()) std::abort();  // everything rendered is quoted
    }
  }
}

void Exercise(std::string_view text) {
  const ShellAnalysis a = AnalyzeShellCommand(text);
  if (!a.ok) {
    if (a.reason.empty() || !a.parts.empty()) std::abort();
    return;
  }
  if (!a.reason.empty() || a.parts.empty() || a.parts[0].op != ChainOp::kFirst) std::abort();
  for (const ShellChainPart& part : a.parts) {
    if (part.pipeline.empty()) std::abort();
    for (const ShellSegment& seg : part.pipeline) {
      if (seg.words.empty()) std::abort();
    }
  }
  CheckSame(a, AnalyzeShellCommand(sandrun::policy::RenderShellCommand(a.parts)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  Exercise(raw);
  Exercise(Assemble(raw));
  return 0;
}
