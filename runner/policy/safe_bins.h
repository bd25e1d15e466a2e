// Safe bins (reference §5.6, SPEC §6.3): stdin-only filters (`wc -l`, `sort -n`, `head -n 5`)
// that satisfy a segment without an allowlist entry, provided the binary sits in a trusted
// directory and every argument fits the bin's profile. Pure logic, no I/O except the loader.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(auto builtin, LoadSafeBinProfiles(harden::DefaultProfilesDir()));
//   SafeBinSettings s = MakeSafeBinSettings(config_bins, config_dirs, builtin, custom_profiles);
//   SafeBinVerdict v = CheckSafeBinUsage(s, "/usr/bin/wc", {"wc", "-l"});  // v.ok
//
// Profiles are data: profiles/safe-bins/<name>.json (profiles/README.md), read through the one
// profile loader (sandbox/harden/profile_file.h):
//   {"name": "default", "description": "...",
//    "profiles": {"wc": {"minPositional": 0, "maxPositional": 0,
//                        "allowedValueFlags": [...], "allowedFlags": [...],
//                        "deniedFlags": [...]}, ...}}
// Every key of a profile is optional (no limits, no flags). `allowedFlags` (boolean flags) is
// sandrun's extension of OpenClaw's format (SPEC §6.3).
//
// Never safe bins, whatever a profile or the config says: jq (reads the environment and loads
// code from files), every interpreter-like program (IsInterpreterLike: awk, sed, python, ...)
// and every shell (IsShellName).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::policy {

// What a safe bin may be given. Flags are spelled "-x" (one short flag) or "--name" (a long one).
struct SafeBinProfile {
  int64_t min_positional = 0;
  std::optional<int64_t> max_positional;         // nullopt: no upper limit
  std::vector<std::string> allowed_value_flags;  // take a value: "-n 5", "-n5", "--lines=5"
  std::vector<std::string> allowed_flags;        // boolean: "-l", "--lines" (sandrun extension)
  std::vector<std::string> denied_flags;         // refused outright (prefixes of them too)

  bool operator==(const SafeBinProfile&) const = default;
};

// Reads profiles/safe-bins/<name>.json; the key is the bin name. Refused (an error naming the
// file, the key and the reason): unknown keys, wrong types, negative or inverted limits, flags
// not shaped "-x" / "--name", a flag listed twice or in two lists, bin names that are not
// lowercase [a-z0-9._+-], and jq, interpreters and shells.
Result<std::map<std::string, SafeBinProfile>> LoadSafeBinProfiles(
    const std::string& profiles_dir, const std::string& name = "default");
// The same for text in memory (tests); `expected_name` "" skips the file-stem check.
Result<std::map<std::string, SafeBinProfile>> ParseSafeBinProfiles(
    std::string_view text, const std::string& path, const std::string& expected_name);

// tools.exec.safeBinProfiles.<bin> as written in the config, before normalisation.
struct CustomSafeBinProfile {
  std::optional<double> min_positional;  // JSON numbers: truncated; negative or non-finite ignored
  std::optional<double> max_positional;
  std::vector<std::string> allowed_value_flags;
  std::vector<std::string> allowed_flags;
  std::vector<std::string> denied_flags;
};

// OpenClaw's custom profile normalisation: limits truncated toward zero and ignored when negative
// (or NaN/infinite); max < min -> max = min; flags trimmed, empties dropped, deduped, sorted.
SafeBinProfile NormalizeCustomProfile(const CustomSafeBinProfile& raw);

// The built-in profiles overridden by the custom ones (names trimmed and lowercased; a custom
// profile replaces the built-in one of the same name entirely).
std::map<std::string, SafeBinProfile> MergeSafeBinProfiles(
    std::map<std::string, SafeBinProfile> builtin,
    const std::map<std::string, CustomSafeBinProfile>& custom);

// `cut uniq head tail tr wc`: tools.exec.safeBins when the key is absent ([] means none).
std::vector<std::string> DefaultSafeBins();
// `/bin /usr/bin`: always trusted; tools.exec.safeBinTrustedDirs adds to them.
std::vector<std::string> DefaultSafeBinTrustedDirs();

// Names trimmed and lowercased, empties dropped, duplicates removed (first occurrence kept).
std::vector<std::string> NormalizeSafeBinNames(const std::vector<std::string>& names);
// The defaults followed by `extra`, each lexically normalised ("//", "/./", "/x/..", trailing
// '/'); relative entries are dropped (never resolved against a cwd or PATH); duplicates removed.
std::vector<std::string> ResolveSafeBinTrustedDirs(const std::vector<std::string>& extra);

struct SafeBinSettings {
  std::vector<std::string> bins;                   // lowercased names
  std::vector<std::string> trusted_dirs;           // absolute; /bin, /usr/bin + extras
  std::map<std::string, SafeBinProfile> profiles;  // built-in merged with custom
};

// Settings from config values: `bins` nullopt = DefaultSafeBins(); the dirs through
// ResolveSafeBinTrustedDirs; the profiles through MergeSafeBinProfiles.
SafeBinSettings MakeSafeBinSettings(const std::optional<std::vector<std::string>>& bins,
                                    const std::vector<std::string>& extra_trusted_dirs,
                                    std::map<std::string, SafeBinProfile> builtin,
                                    const std::map<std::string, CustomSafeBinProfile>& custom);

// Checks the arguments (argv without argv[0]) of `bin` against `p`; "" when they are fine, else a
// short reason. The algorithm (reference §5.6 with sandrun's boolean flags):
//   - "" and "-" (stdin) are skipped; after "--" every token except "" and "-" is positional.
//   - A positional must be a safe literal: none of * ? [ ], not path-like (./ ../ ~ / prefixes,
//     X:\ or X:/).
//   - "--name[=value]" resolves exactly, or by an unambiguous prefix of at least 3 characters
//     ("--li" -> "--lines"), among the profile's value, boolean and denied flags. Unknown or
//     ambiguous -> refused; denied -> refused; "=value" on a flag that takes none -> refused; a
//     value flag needs a safe-literal value, inline or in the next token.
//   - "-abc" is scanned left to right: a denied flag refuses; a boolean flag is fine; the first
//     value flag takes the rest of the cluster ("-n5") or the next token as its value; any other
//     character (digits too: "-5") refuses.
//   - Then min_positional <= count <= max_positional.
//   - Then the semantic rules: awk gawk mawk nawk sed gsed jq are always refused (`bin` is
//     compared by basename, lowercased).
// A flag listed in several lists (custom profiles are not checked for that) takes the strictest
// reading: denied, then boolean (a following token is then checked and counted as an argument),
// then value. Accepting allocates nothing; a refusal builds its reason.
std::string ValidateSafeBinArgv(std::span<const std::string> args, const SafeBinProfile& p,
                                std::string_view bin);
std::string ValidateSafeBinArgv(const std::vector<std::string>& args, const SafeBinProfile& p,
                                std::string_view bin);

struct SafeBinVerdict {
  bool ok = false;
  std::string reason;  // why not; "" when ok
};

// Is running `resolved_path` (the real path of argv[0]) with `argv` (argv[0] included) a safe-bin
// use? All of: the lowercased basename is in s.bins; the directory of `resolved_path` is exactly
// one of s.trusted_dirs (trailing slashes ignored; never derived from PATH); the bin has a profile
// (else the reason says "use allowlist or define tools.exec.safeBinProfiles.<bin>"); it is not
// jq, an interpreter or a shell; ValidateSafeBinArgv accepts the arguments.
SafeBinVerdict CheckSafeBinUsage(const SafeBinSettings& s, const std::string& resolved_path,
                                 const std::vector<std::string>& argv);

}  // namespace sandrun::policy
