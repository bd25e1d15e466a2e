// Script preflight for gateway runs (reference §3.5, OpenClaw's validateScriptFileForShellBleed):
// before `python x.py` / `node x.js` runs on the host, the script is checked for shell syntax
// that leaked into it, and interpreter invocations too complex to check are refused.
//
//   1. The command is split like splitShellArgs; leading VAR=x words and an `env` prefix (with
//      its options) are skipped. python / python3 / python3.N: the first positional argument when
//      it ends in .py (-c / -m: none; -W -X -Q --check-hash-based-pycs take a value). node: .js
//      files preloaded with -r / --require / --import, and the entry .js (-e / -p / --eval /
//      --print: no entry).
//   2. Each target inside the workdir (relative paths must not escape; a symlink must resolve
//      inside) that is a regular file of at most 512 KiB is read; anything unreadable is skipped.
//      `$[A-Z_][A-Z0-9_]+` in it refuses ("likely shell variable injection"), as does a node file
//      whose first non-empty line starts with the word NODE.
//   3. Without a target: an interpreter invocation (in any segment, or in a sh/bash/... -c
//      payload) in a command with complex syntax (| && || ; newline $( ` <( >( outside quotes)
//      that has a .py/.js hint in the same segment, an interpreter piped after a segment with a
//      hint, or process substitution, refuses ("complex interpreter invocation"). Info-only
//      (-V --version -h --help; node -v -c --check) and eval invocations do not count.
// All refusals are code "preflight" with OpenClaw's texts.
//
// It runs only where OpenClaw runs it: gateway runs whose effective policy is not security=full
// with ask=off (PreflightApplies).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runner/policy/gate.h"
#include "runner/policy/gate_types.h"

namespace sandrun::policy {

inline constexpr size_t kPreflightMaxScriptBytes = 512 * 1024;

// Gateway, allowed, and not (security=full, ask=off).
bool PreflightApplies(const Decision& decision);

// Checks `command` about to run in `workdir` (an absolute host directory). nullopt: go ahead.
std::optional<Error> ScriptPreflight(std::string_view command, const std::string& workdir);

}  // namespace sandrun::policy
