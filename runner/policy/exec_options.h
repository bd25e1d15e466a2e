// Programs that run commands through their own options or subcommands (issue 12): `git -c
// alias.x='!cmd' x`, `tar --checkpoint-action=exec=cmd`, `ssh -o ProxyCommand=cmd`, `zip -TT
// cmd`, `vim -c '!cmd'`, `rsync -e cmd`, ... An allowlist entry for such a program authorises
// the program, not every command it can be told to run. The table is data,
// profiles/exec-options/<name>.json (profiles/README.md), read through the one profile loader
// (sandbox/harden/profile_file.h). Pure logic apart from the loader.
//
// What a hit means (allowlist_eval.h, approval_flow.h): it is reported like an inline eval
// (AllowlistEvaluation::inline_eval), so under strictInlineEval the command needs an approval
// every time and allow-always never persists it; and, whatever strictInlineEval says, the segment
// is not satisfied by the allowlist, a safe bin or a skill (an allowlist miss: ask=on-miss asks,
// ask=off denies), so it never runs as "allowlisted". (Stricter than OpenClaw, which runs an
// allowlisted git whatever its options; SPEC §10 allows stricter.)
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(const ExecOptionTable* table, BuiltinExecOptionTable());
//   if (auto hit = DetectExecOption(*table, effective_argv, real_path)) ... hit->description
//
// Matching (case-sensitive options; the program by basename, lowercased):
//   - The program: argv[0]'s basename, else the basename of its real path (`vi` is
//     /usr/bin/vim.basic), looked up among the table's names and aliases. argv[0] busybox or
//     toybox: argv[1] is the program (the applet).
//   - anyUse: every use is a hit (`vim`, `less`, `strace`: they run commands by themselves).
//   - oldStyle (tar): a first argument without '-' is a cluster of short options (`tar cIf`).
//   - An option rule "-x" matches a token "-x", "-xVALUE" and any short cluster holding x
//     ("-cIf"); "-xy" (several characters after one dash: zip's -TT) matches a single-dash token
//     containing xy after the dash; "--name" matches "--name", "--name=..." and, with abbrev N,
//     any prefix of "--name" of at least N characters (GNU getopt abbreviations: "--to-c" for
//     "--to-command"); "--name=" matches only with an attached value ("--exec-path=DIR", not
//     the bare "--exec-path" that prints a path). Matching is deliberately loose (a token that
//     is really another option's value may match): a false hit costs an approval, a missed one
//     a command run without one.
//   - valueKeys: only a value whose key is listed is a hit. The value is the rest of the token
//     ("-oKey=v", "--opt=v") or the next token; its key is the first word, leading whitespace
//     and double quotes skipped, ending at whitespace, '=' or '"', lowercased (ssh reads
//     `-o '"ProxyCommand" cmd'` too). An empty key is a hit; no value at all is not.
//   - Programs without subcommands: every argument is scanned (also after "--").
//   - Programs with subcommands (git): the arguments before the first non-option are the
//     program's own options, scanned with its rules; each must be a rule, a valueOption (which
//     takes the next token unless written "--name=value"; so does a rule with valueKeys) or a
//     flagOption, else it is a hit (an option the table does not know could take a value and
//     hide the subcommand). "--" ends them. The next argument is the subcommand: anyUse -> a hit;
//     else the rest is scanned with its rules. Rules marked anywhere (git --help) apply to the
//     subcommand's arguments too.
// Descriptions: "<exe> <option>" ("git -c", "tar --checkpoint-action", "zip -TT"), with the key
// for valueKeys ("ssh -o proxycommand"), "<exe> <subcommand> <option>" ("git rebase --exec"),
// "<exe> (runs commands itself)" and "<exe> <subcommand> (runs commands itself)" for anyUse;
// <exe> is argv[0]'s basename, lowercased.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::policy {

struct ExecOptionRule {
  std::string option;                   // "-x", "-xy", "--name" or "--name="
  size_t abbrev = 0;                    // "--name" / "--name=": shortest accepted prefix; 0: none
  std::vector<std::string> value_keys;  // lowercased; empty: any use of the option is a hit
  bool anywhere = false;                // also after the subcommand
  std::string why;
};

// The options of a program (before its subcommand) or of one subcommand.
struct ExecOptionScope {
  bool any_use = false;
  std::vector<ExecOptionRule> options;
  std::string why;
};

struct ExecOptionProgram {
  std::string name;                  // the key in the file
  std::vector<std::string> aliases;  // other basenames of the same program
  ExecOptionScope scope;             // anyUse / options / why of the program itself
  bool old_style = false;
  std::vector<std::string> value_options;  // take the next token (before the subcommand)
  std::vector<std::string> flag_options;   // take none
  std::map<std::string, ExecOptionScope> subcommands;
};

class ExecOptionTable {
 public:
  ExecOptionTable() = default;
  // Indexes `programs` by name and alias (the loader refuses duplicates; here the first wins).
  explicit ExecOptionTable(std::vector<ExecOptionProgram> programs);

  // The program called `basename` (a name or an alias, lowercased); null when none.
  const ExecOptionProgram* Find(std::string_view basename) const;
  const std::vector<ExecOptionProgram>& programs() const { return programs_; }

 private:
  std::vector<ExecOptionProgram> programs_;
  std::map<std::string, size_t, std::less<>> index_;  // name or alias -> programs_ index
};

// Reads profiles/exec-options/<name>.json. Refused (an error naming the file, the key and the
// reason): unknown keys, wrong types, a missing or empty "why" (every program, anyUse subcommand
// and option rule has one), program names or aliases that are not lowercase [a-z0-9._+-] or
// appear twice, options not shaped as above (or listed twice in one scope), abbrev on a short
// option or outside [3, length], valueKeys that are empty or not lowercase [a-z0-9._-], anyUse
// together with options (or subcommands, valueOptions, flagOptions, oldStyle), a program or
// subcommand that is neither anyUse nor has a rule, an option in both valueOptions and
// flagOptions, and valueOptions/flagOptions/anywhere without subcommands.
Result<ExecOptionTable> LoadExecOptionTable(const std::string& profiles_dir,
                                            const std::string& name = "default");
// The same for text in memory (tests); `expected_name` "" skips the file-stem check.
Result<ExecOptionTable> ParseExecOptionTable(std::string_view text, const std::string& path,
                                             const std::string& expected_name);

// profiles/exec-options/default.json under harden::DefaultProfilesDir(), loaded once per process
// (a failure is not cached).
Result<const ExecOptionTable*> BuiltinExecOptionTable();

struct ExecOptionHit {
  std::string description;  // "git -c", "vim (runs commands itself)", ...
  std::string why;          // the rule's (or the program's) why
};

// The first hit in `argv` (the segment after dispatch wrappers; argv[0] included), nullopt when
// none. `real_path` is argv[0]'s resolved real path ("" when unknown).
std::optional<ExecOptionHit> DetectExecOption(const ExecOptionTable& table,
                                              const std::vector<std::string>& argv,
                                              std::string_view real_path = {});

}  // namespace sandrun::policy
