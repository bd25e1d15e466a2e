// libFuzzer target for the apply_patch parser and the per-file applier: any bytes, taken both as
// patch text and as a recipe of patch lines (so random input reaches deep into the grammar), must
// parse or fail with an "Invalid patch" error, and every parsed update must apply or fail cleanly
// against files built from its own lines, never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runner/patch/patch.h"
#include "runner/patch/text_apply.h"

namespace {

using sandrun::patch::Chunk;
using sandrun::patch::Hunk;

// Building blocks of patch lines; the recipe picks one per byte.
constexpr std::string_view kPieces[] = {
    "*** Begin Patch",
    "*** End Patch",
    "*** Add File: a.txt",
    "*** Delete File: b.txt",
    "*** Update File: c.txt",
    "*** Move to: d/e.txt",
    "*** End of File",
    "@@",
    "@@ def f():",
    "@@ -1,3 +1,4 @@ ctx",
    " ctx",
    "-old",
    "+new",
    "",
    " ",
    "+",
    "-",
    "<<'EOF'",
    "EOF",
    "x\r",
    "  *** Begin Patch  ",
    "\t",
    "-ctx",
    "+\xE2\x80\x94",
    " \xE2\x80\x9Cq\xE2\x80\x9D",
};

std::string Assemble(std::string_view recipe) {
  std::string text;
  for (char ch : recipe) {
    const auto c = static_cast<unsigned char>(ch);
    const size_t n = sizeof(kPieces) / sizeof(kPieces[0]);
    if (c % 8 == 7) {
      text.push_back(ch);  // a raw byte now and then
      continue;
    }
    text.append(kPieces[c % n]);
    text.push_back(c % 5 == 0 ? '\r' : '\n');
    if (c % 5 == 0) text.push_back('\n');
  }
  return text;
}

// Files the chunks could plausibly apply to: their own old lines, in LF and CRLF, with and
// without a final newline, and with a line around them twice (ambiguity).
void ApplyAll(const Hunk& hunk) {
  std::string base;
  for (const Chunk& c : hunk.chunks) {
    if (c.line == 0 || c.new_line_origin.size() != c.new_lines.size()) std::abort();
    if (c.context) base += *c.context + "\n";
    for (const auto& l : c.old_lines) base += l + "\n";
  }
  std::string crlf;
  for (char ch : base) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
  const std::string inputs[] = {
      base,        crlf, base.empty() ? base : base.substr(0, base.size() - 1),
      base + base, "",   "ctx\nold\n"};
  for (const std::string& original : inputs) {
    auto out = sandrun::patch::ApplyChunks(original, hunk.chunks, hunk.path);
    if (!out && out.error().message.empty()) std::abort();
  }
}

void Exercise(std::string_view text) {
  auto parsed = sandrun::patch::ParsePatch(text);
  if (!parsed) {
    if (parsed.error().message.rfind("Invalid patch", 0) != 0) std::abort();
    return;
  }
  if (parsed->hunks.empty()) std::abort();
  for (const Hunk& hunk : parsed->hunks) {
    if (hunk.path.empty() || hunk.line == 0) std::abort();
    if (hunk.move_path && hunk.move_path->empty()) std::abort();
    if (hunk.kind == Hunk::Kind::kUpdate) {
      if (hunk.chunks.empty() && !hunk.move_path) std::abort();
      ApplyAll(hunk);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  Exercise(raw);
  Exercise(Assemble(raw));
  // The recipe again, inside a valid envelope.
  Exercise("*** Begin Patch\n*** Update File: c.txt\n" + Assemble(raw) + "*** End Patch\n");
  return 0;
}
