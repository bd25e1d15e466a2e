// Small string helpers shared across the tree (ASCII semantics, locale-independent).
#pragma once

#include <string>
#include <string_view>

namespace sandrun {

// `s` without leading and trailing whitespace (space, \t, \n, \r, \v, \f).
std::string Trim(std::string_view s);

// `s` with ASCII letters lowercased.
std::string Lower(std::string_view s);

// Simple glob: `*` any run (also empty), `?` one character, everything else literal; the whole
// text must match. Case-sensitive.
bool GlobMatch(std::string_view pattern, std::string_view text);

// Whether `c` continues a UTF-8 sequence (10xxxxxx): a cut before it splits a character.
inline bool IsUtf8Continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Whether `s` is well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates (U+D800..DFFF,
// which a JSON \u escape can smuggle in as bytes), nothing above U+10FFFF.
bool IsValidUtf8(std::string_view s);

}  // namespace sandrun
