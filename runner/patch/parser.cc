#include <string>
#include <string_view>
#include <vector>

#include "runner/patch/patch.h"

namespace sandrun::patch {
namespace {

constexpr std::string_view kBeginPatch = "*** Begin Patch";
constexpr std::string_view kEndPatch = "*** End Patch";
constexpr std::string_view kAddFile = "*** Add File: ";
constexpr std::string_view kDeleteFile = "*** Delete File: ";
constexpr std::string_view kUpdateFile = "*** Update File: ";
constexpr std::string_view kMoveTo = "*** Move to: ";
constexpr std::string_view kEndOfFile = "*** End of File";
constexpr std::string_view kContextMarker = "@@ ";
constexpr std::string_view kEmptyContextMarker = "@@";

// One line of the patch text (without its "\n" or "\r\n") and its 1-based line number.
struct Line {
  std::string_view text;
  size_t number = 0;
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

Error InvalidPatch(const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, "Invalid patch: " + message);
}

Error InvalidHunk(size_t line, const std::string& message) {
  return Error(ErrorCode::kInvalidArgument,
               "Invalid patch hunk on line " + std::to_string(line) + ": " + message);
}

// Shortens a quoted line in an error message.
std::string Quote(std::string_view s) {
  constexpr size_t kMax = 120;
  if (s.size() <= kMax) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, kMax)) + "...'";
}

// Splits into lines; a "\r" before "\n" is dropped (a CRLF patch reads as LF, as Rust's
// str::lines() does in Codex).
std::vector<Line> SplitLines(std::string_view text) {
  std::vector<Line> lines;
  size_t number = 1;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({line, number++});
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

bool IsHeredocStart(std::string_view line) {
  return line == "<<EOF" || line == "<<'EOF'" || line == "<<\"EOF\"";
}

// "@@ -12,3 +12,4 @@ rest": a unified-diff range header. Returns the text after it (maybe
// empty), or nullopt when `context` is not such a header.
std::optional<std::string_view> AfterRangeHeader(std::string_view context) {
  auto range = [&](char sign) {
    if (context.empty() || context.front() != sign) return false;
    context.remove_prefix(1);
    size_t digits = 0;
    while (!context.empty() && ((context.front() >= '0' && context.front() <= '9') ||
                                (digits > 0 && context.front() == ','))) {
      context.remove_prefix(1);
      ++digits;
    }
    return digits > 0;
  };
  if (!range('-') || context.empty() || context.front() != ' ') return std::nullopt;
  context.remove_prefix(1);
  if (!range('+')) return std::nullopt;
  context = Trim(context);
  if (!context.starts_with("@@")) return std::nullopt;
  return Trim(context.substr(2));
}

// Parses one "@@" chunk starting at lines[0]. Returns the number of lines consumed.
Result<size_t> ParseChunk(const std::vector<Line>& lines, size_t begin, size_t end,
                          bool allow_missing_context, Chunk* chunk) {
  const Line& first = lines[begin];
  chunk->line = first.number;
  size_t start = begin;
  std::string_view head = TrimRight(first.text);
  if (head == kEmptyContextMarker) {
    start = begin + 1;
  } else if (head.starts_with(kContextMarker)) {
    std::string_view context = Trim(head.substr(kContextMarker.size()));
    if (auto rest = AfterRangeHeader(context)) context = *rest;
    if (!context.empty()) chunk->context = std::string(context);
    start = begin + 1;
  } else if (!allow_missing_context) {
    return InvalidHunk(
        first.number,
        "Expected update hunk to start with a @@ context marker, got: " + Quote(first.text));
  }
  if (start >= end) {
    return InvalidHunk(first.number, "Update hunk does not contain any lines");
  }
  size_t parsed = 0;
  size_t i = start;
  for (; i < end; ++i) {
    std::string_view text = lines[i].text;
    if (Trim(text) == kEndOfFile) {
      if (parsed == 0) {
        return InvalidHunk(lines[i].number, "Update hunk does not contain any lines");
      }
      chunk->end_of_file = true;
      ++i;
      break;
    }
    if (text.empty() || text.front() == ' ') {  // an empty line is an empty context line
      chunk->new_line_origin.push_back(chunk->old_lines.size());
      chunk->old_lines.emplace_back(text.substr(text.empty() ? 0 : 1));
      chunk->new_lines.emplace_back(text.substr(text.empty() ? 0 : 1));
    } else if (text.front() == '+') {
      chunk->new_line_origin.push_back(kAddedLine);
      chunk->new_lines.emplace_back(text.substr(1));
    } else if (text.front() == '-') {
      chunk->old_lines.emplace_back(text.substr(1));
    } else {
      if (parsed == 0) {
        return InvalidHunk(lines[i].number,
                           "Unexpected line found in update hunk: " + Quote(text) +
                               ". Every line should start with ' ' (context line), '+' (added "
                               "line), or '-' (removed line)");
      }
      break;  // the start of the next chunk or hunk
    }
    ++parsed;
  }
  return i - begin;
}

Result<std::string> HunkPath(std::string_view raw, const Line& line) {
  std::string_view path = Trim(raw);
  if (path.empty()) return InvalidHunk(line.number, "the file path is empty");
  return std::string(path);
}

// Parses the hunk starting at lines[begin]; returns the number of lines consumed.
Result<size_t> ParseHunk(const std::vector<Line>& lines, size_t begin, size_t end, Hunk* hunk) {
  const Line& header = lines[begin];
  std::string_view first = Trim(header.text);
  hunk->line = header.number;
  if (first.starts_with(kAddFile) || first == Trim(kAddFile)) {
    hunk->kind = Hunk::Kind::kAdd;
    SANDRUN_ASSIGN_OR_RETURN(
        hunk->path, HunkPath(first.substr(std::min(first.size(), kAddFile.size())), header));
    size_t i = begin + 1;
    for (; i < end && lines[i].text.starts_with('+'); ++i) {
      hunk->contents.append(lines[i].text.substr(1));
      hunk->contents.push_back('\n');
    }
    return i - begin;
  }
  if (first.starts_with(kDeleteFile) || first == Trim(kDeleteFile)) {
    hunk->kind = Hunk::Kind::kDelete;
    SANDRUN_ASSIGN_OR_RETURN(
        hunk->path, HunkPath(first.substr(std::min(first.size(), kDeleteFile.size())), header));
    return size_t{1};
  }
  if (first.starts_with(kUpdateFile) || first == Trim(kUpdateFile)) {
    hunk->kind = Hunk::Kind::kUpdate;
    SANDRUN_ASSIGN_OR_RETURN(
        hunk->path, HunkPath(first.substr(std::min(first.size(), kUpdateFile.size())), header));
    size_t i = begin + 1;
    if (i < end) {
      std::string_view move = Trim(lines[i].text);
      if (move.starts_with(kMoveTo) || move == Trim(kMoveTo)) {
        SANDRUN_ASSIGN_OR_RETURN(
            std::string to, HunkPath(move.substr(std::min(move.size(), kMoveTo.size())), lines[i]));
        hunk->move_path = std::move(to);
        ++i;
      }
    }
    while (i < end) {
      if (Trim(lines[i].text).empty()) {
        ++i;
        continue;
      }
      if (lines[i].text.starts_with("***")) break;
      Chunk chunk;
      SANDRUN_ASSIGN_OR_RETURN(size_t used,
                               ParseChunk(lines, i, end, hunk->chunks.empty(), &chunk));
      hunk->chunks.push_back(std::move(chunk));
      i += used;
    }
    // A bare move (rename without edits) is allowed; an update that changes nothing is not.
    if (hunk->chunks.empty() && !hunk->move_path.has_value()) {
      return InvalidHunk(header.number, "Update file hunk for path '" + hunk->path + "' is empty");
    }
    return i - begin;
  }
  return InvalidHunk(header.number,
                     Quote(first) +
                         " is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', "
                         "'*** Delete File: {path}', '*** Update File: {path}'");
}

}  // namespace

Result<Patch> ParsePatch(std::string_view text) {
  if (text.size() > kMaxPatchBytes) {
    return InvalidPatch("the patch is " + std::to_string(text.size()) + " bytes; the limit is " +
                        std::to_string(kMaxPatchBytes));
  }
  std::vector<Line> lines = SplitLines(text);
  for (const Line& line : lines) {
    if (line.text.find('\0') != std::string_view::npos) {
      return InvalidPatch("line " + std::to_string(line.number) + " contains a NUL byte");
    }
  }
  // The patch proper: without blank lines around it.
  size_t begin = 0;
  size_t end = lines.size();
  while (begin < end && Trim(lines[begin].text).empty()) ++begin;
  while (end > begin && Trim(lines[end - 1].text).empty()) --end;
  if (begin == end) return InvalidPatch("input is empty.");
  // Lenient: a heredoc wrapper (<<'EOF' ... EOF) as a shell would have passed it.
  if (end - begin >= 4 && IsHeredocStart(Trim(lines[begin].text)) &&
      Trim(lines[end - 1].text).ends_with("EOF")) {
    ++begin;
    --end;
  }
  const Line& first = lines[begin];
  if (Trim(first.text) != kBeginPatch) {
    return InvalidPatch("The first line of the patch must be '*** Begin Patch' (line " +
                        std::to_string(first.number) + " is " + Quote(first.text) + ")");
  }
  const Line& last = lines[end - 1];
  if (end - begin < 2 || Trim(last.text) != kEndPatch) {
    return InvalidPatch("The last line of the patch must be '*** End Patch' (line " +
                        std::to_string(last.number) + " is " + Quote(last.text) + ")");
  }
  Patch patch;
  size_t i = begin + 1;
  const size_t body_end = end - 1;
  while (i < body_end) {
    if (Trim(lines[i].text).empty()) {  // lenient: blank lines between hunks
      ++i;
      continue;
    }
    Hunk hunk;
    SANDRUN_ASSIGN_OR_RETURN(size_t used, ParseHunk(lines, i, body_end, &hunk));
    patch.hunks.push_back(std::move(hunk));
    i += used;
  }
  if (patch.hunks.empty()) return InvalidPatch("no files were modified (the patch has no hunks).");
  return patch;
}

}  // namespace sandrun::patch
