// The apply_patch envelope (SPEC §6b): parsing the patch text into hunks. Pure code, no I/O.
//
//   *** Begin Patch
//   *** Add File: path            followed by "+" lines (the new file's lines)
//   *** Delete File: path
//   *** Update File: path         optionally followed by "*** Move to: new/path", then chunks:
//   @@ [context line]             (the first chunk may omit "@@")
//    context / -removed / +added  lines, optionally ending with "*** End of File"
//   *** End Patch
//
// The grammar and the error texts are those of the Codex/OpenClaw apply_patch parser (lenient
// mode: surrounding whitespace and a `<<'EOF'` heredoc wrapper are tolerated, CRLF patch text is
// read as LF). Every error names the 1-based line of the patch text it is about.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(patch::Patch p, patch::ParsePatch(text));
//   for (const patch::Hunk& h : p.hunks) ...
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::patch {

inline constexpr size_t kMaxPatchBytes = 16u << 20;  // 16 MiB of patch text
inline constexpr size_t kAddedLine = static_cast<size_t>(-1);

// One "@@" section of an Update File hunk.
struct Chunk {
  std::optional<std::string> context;  // "@@ <context>": seek to this line first
  std::vector<std::string> old_lines;  // context and "-" lines, in order
  std::vector<std::string> new_lines;  // context and "+" lines, in order
  // For each new line: the index of the same context line in old_lines, or kAddedLine for a "+"
  // line (so a context line matched leniently keeps the file's own text).
  std::vector<size_t> new_line_origin;
  bool end_of_file = false;  // "*** End of File": old_lines must end the file
  size_t line = 0;           // patch line of the chunk's first line
};

struct Hunk {
  enum class Kind { kAdd, kDelete, kUpdate };
  Kind kind = Kind::kAdd;
  std::string path;                      // as written (relative to the workdir, usually)
  std::optional<std::string> move_path;  // Update only: "*** Move to:"
  std::string contents;                  // Add only: the new file, "\n"-terminated lines
  std::vector<Chunk> chunks;             // Update only (may be empty with a move)
  size_t line = 0;                       // patch line of the hunk header
};

struct Patch {
  std::vector<Hunk> hunks;
};

// Parses the envelope. Errors (code kInvalidArgument) read like
//   "Invalid patch: The first line of the patch must be '*** Begin Patch' (line 1 is 'foo')"
//   "Invalid patch hunk on line 7: Unexpected line found in update hunk: 'x'. Every line ..."
Result<Patch> ParsePatch(std::string_view text);

}  // namespace sandrun::patch
