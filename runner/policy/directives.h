// The chat directives `/exec` and `/elevated` (reference §7, OpenClaw's
// src/auto-reply/reply/exec/directive.ts): a message may carry one of each; the parser takes them
// out of the text and reports what they asked for. Pure functions of the text: what a directive
// may change (authorized senders only, session state) is the caller's business.
//
// Pattern of use:
//   Directives d = ParseDirectives(message);
//   if (d.exec.found && d.exec.bare) ... show the current host/security/ask/node
//   if (d.exec.invalid_host) ... "Invalid exec host \"" + *d.exec.invalid_host + "\"" ...
//   if (d.exec.host) session.exec_host = *d.exec.host;
//   if (d.elevated.level) session.elevated = *d.elevated.level;
//   std::string prompt = d.cleaned;  // the message without the directives
//
// `/exec` (case-insensitive):
//   - The token: `/exec` at the start of the text or after whitespace, followed by the end of
//     the text, whitespace or `:` (regex `(?:^|\s)\/exec(?=$|\s|:)`); the first such token
//     counts, later ones stay in the text. `/executive`, `x/exec` and `path/exec` are not it.
//   - Then optional whitespace, an optional `:`, optional whitespace, then whitespace-separated
//     tokens `key=value` or `key:value`: the first `=` or `:` splits; the key is lowercased, the
//     value kept as written. Keys host, security, ask, node. Parsing stops, leaving the token in
//     the text, at a token without a split, with an empty key, or with an unknown key.
//   - Values: host auto|sandbox|gateway|node, security deny|allowlist|full, ask
//     off|on-miss|always (any case, reported lower case); node anything non-empty. An invalid
//     value is still consumed: it clears the valid field and sets invalid_<key> to the raw value
//     (`node=` sets invalid_node to ""). A key given twice: the last valid value wins, while an
//     invalid_<key> once set stays (as OpenClaw's flags do).
//   - bare: the directive consumed no key=value token (the caller shows the current values).
// `/elevated` (case-insensitive): the token as for /exec (`(?:^|\s)\/elevated(?=$|\s|:)`),
// then optional whitespace, optional `:`, optional whitespace, then one word (a run of
// non-whitespace), always consumed: on|off|ask|full (any case) is the level, lower case; any
// other word is `invalid` (raw). No word: bare.
// cleaned (both): the text before the directive, a space, the text after what it consumed, each
// whitespace run collapsed to one space, trimmed; with no directive, the text trimmed (runs kept).
// Whitespace is ASCII (space, \t, \n, \v, \f, \r). Any length is parsed (the caller bounds it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandrun::policy {

struct ExecDirective {
  bool found = false;  // the text holds an /exec token
  bool bare = false;   // found, and no key=value token was consumed
  // Valid values, normalised: host "auto|sandbox|gateway|node", security "deny|allowlist|full",
  // ask "off|on-miss|always", node as given.
  std::optional<std::string> host, security, ask, node;
  // Invalid values, raw (node: only "").
  std::optional<std::string> invalid_host, invalid_security, invalid_ask, invalid_node;
  std::string cleaned;
};
ExecDirective ParseExecDirective(std::string_view text);

struct ElevatedDirective {
  bool found = false;                  // the text holds an /elevated token
  bool bare = false;                   // found, and no word follows
  std::optional<std::string> level;    // "on", "off", "ask" or "full"
  std::optional<std::string> invalid;  // the word, raw, when it is no level
  std::string cleaned;
};
ElevatedDirective ParseElevatedDirective(std::string_view text);

// Both in one message: /exec on the text, then /elevated on the /exec-cleaned text; `cleaned` is
// the text without either (elevated.cleaned).
struct Directives {
  ExecDirective exec;
  ElevatedDirective elevated;
  std::string cleaned;
};
Directives ParseDirectives(std::string_view text);

}  // namespace sandrun::policy
