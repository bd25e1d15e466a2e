#include "runner/patch/text_apply.h"

#include <algorithm>
#include <optional>

namespace sandrun::patch {
namespace {

// A line of the file: its text (without the line ending) and its ending ("\n", "\r\n" or "").
struct FileLine {
  std::string_view text;
  std::string_view eol;
};

enum class Level { kExact, kTrimEnd, kTrim, kNormalized };
constexpr Level kLevels[] = {Level::kExact, Level::kTrimEnd, Level::kTrim, Level::kNormalized};

// At most this many matches are collected (ambiguity needs two; the error lists a few).
constexpr size_t kMaxMatches = 4;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view TrimEnd(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view Trim(std::string_view s) {
  s = TrimEnd(s);
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

// Typographic punctuation folded to ASCII: dashes and minus to '-', single quotes to '\'',
// double quotes to '"', the Unicode spaces to ' ' (UTF-8 sequences).
std::string Fold(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    if (byte(i) == 0xC2 && i + 1 < s.size() && byte(i + 1) == 0xA0) {
      out.push_back(' ');
      ++i;
      continue;
    }
    if (i + 2 < s.size() && (byte(i) == 0xE2 || byte(i) == 0xE3) && (byte(i + 1) & 0xC0u) == 0x80 &&
        (byte(i + 2) & 0xC0u) == 0x80) {
      unsigned cp =
          ((byte(i) & 0x0Fu) << 12) | ((byte(i + 1) & 0x3Fu) << 6) | (byte(i + 2) & 0x3Fu);
      char folded = 0;
      if ((cp >= 0x2010 && cp <= 0x2015) || cp == 0x2212) {
        folded = '-';
      } else if (cp >= 0x2018 && cp <= 0x201B) {
        folded = '\'';
      } else if (cp >= 0x201C && cp <= 0x201F) {
        folded = '"';
      } else if ((cp >= 0x2002 && cp <= 0x200A) || cp == 0x202F || cp == 0x205F || cp == 0x3000) {
        folded = ' ';
      }
      if (folded != 0) {
        out.push_back(folded);
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool LinesEqual(Level level, std::string_view a, std::string_view b) {
  switch (level) {
    case Level::kExact:
      return a == b;
    case Level::kTrimEnd:
      return TrimEnd(a) == TrimEnd(b);
    case Level::kTrim:
      return Trim(a) == Trim(b);
    case Level::kNormalized:
      return Fold(Trim(a)) == Fold(Trim(b));
  }
  return false;
}

std::vector<FileLine> SplitFile(std::string_view content) {
  std::vector<FileLine> lines;
  lines.reserve(static_cast<size_t>(std::count(content.begin(), content.end(), '\n')) + 1);
  while (!content.empty()) {
    size_t nl = content.find('\n');
    if (nl == std::string_view::npos) {
      lines.push_back({content, {}});
      break;
    }
    if (nl > 0 && content[nl - 1] == '\r') {
      lines.push_back({content.substr(0, nl - 1), content.substr(nl - 1, 2)});
    } else {
      lines.push_back({content.substr(0, nl), content.substr(nl, 1)});
    }
    content.remove_prefix(nl + 1);
  }
  return lines;
}

// Where `pattern` occurs in lines[from..] (only at the very end with `at_end`), at the first
// level that finds it at all. At most kMaxMatches positions.
std::vector<size_t> FindAll(const std::vector<FileLine>& lines,
                            const std::vector<std::string>& pattern, size_t from, bool at_end) {
  std::vector<size_t> found;
  const size_t n = lines.size();
  const size_t m = pattern.size();
  if (m > n) return found;
  size_t first = from;
  const size_t last = n - m;
  if (at_end) first = std::max(from, last);
  for (Level level : kLevels) {
    for (size_t i = first; i <= last && found.size() < kMaxMatches; ++i) {
      bool match = true;
      for (size_t k = 0; k < m && match; ++k)
        match = LinesEqual(level, lines[i + k].text, pattern[k]);
      if (match) found.push_back(i);
    }
    if (!found.empty()) break;
  }
  return found;
}

std::string LineList(const std::vector<size_t>& positions) {
  std::string out;
  for (size_t i = 0; i < positions.size(); ++i) {
    if (i > 0) out += i + 1 == positions.size() ? " and " : ", ";
    out += std::to_string(positions[i] + 1);
  }
  if (positions.size() >= kMaxMatches) out += " (and maybe more)";
  return out;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i > 0 ? "\n" : "") + lines[i];
  return out;
}

Error Failed(std::string message) { return Error(ErrorCode::kInvalidArgument, std::move(message)); }

struct Replacement {
  size_t index = 0;              // first replaced line
  size_t count = 0;              // lines replaced
  const Chunk* chunk = nullptr;  // its new lines
  size_t new_count = 0;          // how many of them (a trailing "" may be cut)
};

}  // namespace

bool LooksBinary(std::string_view content) { return content.find('\0') != std::string_view::npos; }

Result<std::string> ApplyChunks(std::string_view original, const std::vector<Chunk>& chunks,
                                std::string_view path) {
  const std::string file(path);
  if (LooksBinary(original)) {
    return Failed(file + " is a binary file (it contains NUL bytes); apply_patch edits text only");
  }
  const std::vector<FileLine> lines = SplitFile(original);
  std::vector<Replacement> replacements;
  size_t cursor = 0;
  for (const Chunk& chunk : chunks) {
    const std::string where = "(hunk at patch line " + std::to_string(chunk.line) + ")";
    if (chunk.context.has_value()) {
      std::vector<size_t> at = FindAll(lines, {*chunk.context}, cursor, false);
      if (at.empty()) {
        return Failed("Failed to find context '" + *chunk.context + "' in " + file + " " + where);
      }
      if (at.size() > 1) {
        return Failed("Ambiguous hunk at patch line " + std::to_string(chunk.line) +
                      ": its @@ context '" + *chunk.context + "' matches " + file + " at lines " +
                      LineList(at) + "; use an @@ line that appears once after the previous hunk");
      }
      cursor = at[0] + 1;
    }
    if (chunk.old_lines.empty()) {
      const size_t index = chunk.context.has_value() ? cursor : lines.size();
      replacements.push_back({index, 0, &chunk, chunk.new_lines.size()});
      cursor = index;
      continue;
    }
    std::vector<std::string> pattern = chunk.old_lines;
    size_t new_count = chunk.new_lines.size();
    std::vector<size_t> at = FindAll(lines, pattern, cursor, chunk.end_of_file);
    if (at.empty() && pattern.back().empty()) {
      // The trailing empty line stands for the file's final newline (Codex): retry without it.
      pattern.pop_back();
      if (new_count > 0 && chunk.new_lines[new_count - 1].empty()) --new_count;
      if (!pattern.empty()) at = FindAll(lines, pattern, cursor, chunk.end_of_file);
    }
    if (at.empty()) {
      return Failed("Failed to find expected lines in " + file + " " + where + ":\n" +
                    Joined(chunk.old_lines));
    }
    if (at.size() > 1) {
      return Failed("Ambiguous hunk at patch line " + std::to_string(chunk.line) +
                    ": its lines match " + file + " at lines " + LineList(at) +
                    "; add context lines (or an @@ line) so that it matches exactly one place");
    }
    replacements.push_back({at[0], pattern.size(), &chunk, new_count});
    cursor = at[0] + pattern.size();
  }

  // Assemble: untouched lines keep their endings; new lines get the dominant one.
  size_t crlf = 0;
  size_t lf = 0;
  for (const FileLine& l : lines) {
    if (l.eol == "\r\n") ++crlf;
    if (l.eol == "\n") ++lf;
  }
  const std::string_view dominant = crlf > lf ? "\r\n" : "\n";
  const bool final_newline = original.empty() || original.back() == '\n';
  std::vector<FileLine> out;
  out.reserve(lines.size() + 16);
  size_t pos = 0;
  for (const Replacement& r : replacements) {
    for (; pos < r.index; ++pos) out.push_back(lines[pos]);
    for (size_t k = 0; k < r.new_count; ++k) {
      // A context line stays as the file has it (it may have matched only leniently).
      const size_t origin =
          k < r.chunk->new_line_origin.size() ? r.chunk->new_line_origin[k] : kAddedLine;
      if (origin < r.count) {
        out.push_back(lines[r.index + origin]);
      } else {
        out.push_back({r.chunk->new_lines[k], {}});
      }
    }
    pos = r.index + r.count;
  }
  for (; pos < lines.size(); ++pos) out.push_back(lines[pos]);

  std::string result;
  result.reserve(original.size() + 256);
  for (size_t i = 0; i < out.size(); ++i) {
    result.append(out[i].text);
    const bool last = i + 1 == out.size();
    if (last && !final_newline) break;
    result.append(out[i].eol.empty() ? dominant : out[i].eol);
  }
  return result;
}

}  // namespace sandrun::patch
