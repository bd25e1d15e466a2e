// Applying an Update File hunk's chunks to one file's bytes. Pure code, no I/O.
//
// Matching: each chunk's old lines are looked for from where the previous chunk ended (after its
// "@@ context" line, when it has one), first exactly, then ignoring trailing whitespace, then
// ignoring surrounding whitespace, then with typographic dashes, quotes and spaces folded to
// ASCII (Codex's seek_sequence levels). The first level that finds the lines decides; if it finds
// them at more than one place the hunk is ambiguous and refused (so is an "@@" context line that
// appears more than once), and "*** End of File" pins the lines to the end of the file.
// A chunk with no old lines inserts after its "@@" line, or at the end of the file.
//
// Line endings: lines are compared without their "\r\n" / "\n"; unchanged lines keep theirs, new
// lines get the file's dominant ending (CRLF when most lines end in CRLF), and a file that did not
// end with a newline still does not.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runner/patch/patch.h"
#include "sandbox/base/result.h"

namespace sandrun::patch {

// Files with a NUL byte are binary: apply_patch refuses to edit them.
bool LooksBinary(std::string_view content);

// Applies `chunks` (in order) to `original`. `path` names the file in errors (kInvalidArgument):
//   "Failed to find expected lines in a.txt (hunk at patch line 7):\n<the lines>"
//   "Failed to find context 'def f():' in a.txt (hunk at patch line 7)"
//   "Ambiguous hunk at patch line 7: its lines match a.txt at lines 3 and 12 ..."
Result<std::string> ApplyChunks(std::string_view original, const std::vector<Chunk>& chunks,
                                std::string_view path);

}  // namespace sandrun::patch
