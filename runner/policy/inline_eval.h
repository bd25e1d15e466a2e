// strictInlineEval (reference §5.8, §10; SPEC §6.4): does one command segment run program text
// given on its command line (`python3 -c ...`, `node -e ...`, `awk '{...}'`, `find -exec ...`,
// `xargs cmd`, `sed s/a/b/`)? With tools.exec.strictInlineEval such a segment always needs an
// approval, even when allowlisted, and allow-always never persists it. Also the name lists that
// other policy code shares: interpreter-like programs (§5.7) and shells. Pure string logic.
//
// Pattern of use (argv of one segment, after dispatch wrappers such as `env` were unwrapped):
//   if (auto hit = DetectInlineEval(argv)) plan.inline_eval.push_back(*hit);  // "python3 -c"
//
// Detection, in order; the first hit wins:
//   1. OpenClaw's flag table. argv[0]'s basename, lowercased (a version suffix such as
//      python3.11 or perl5.36 counts as its family), selects the row; each later token, trimmed,
//      is compared lowercased unless marked raw:
//        python python2 python3 pypy pypy3   -c
//        node nodejs bun deno                -e --eval -p --print
//        awk gawk mawk nawk                  -e --source, prefix --source=
//        ruby lua osascript                  -e
//        perl                                -e -E (reported "perl -e")
//        php                                 -r
//        find                                -exec -execdir -ok -okdir (scans past "--")
//        make gmake                          -f --file --makefile --eval, prefixes -f --file=
//                                            --makefile= --eval=; raw -E and prefix -E
//        sed gsed                            raw -e and prefix -e
//      Scanning stops at "--" (find excepted). Reported "<exe> <flag>": the lowercased token for
//      an exact flag, the flag itself for a prefix form ("make -fx" -> "make -f", "awk
//      --source=x" -> "awk --source").
//   2. OpenClaw's positional carriers (case-sensitive, tokens untrimmed): the first token that is
//      not an option is a program (awk family, sed: "<exe> inline program") or a command (xargs:
//      "xargs inline command"). Options that take a value skip it (awk: -f --file -F
//      --field-separator -v --assign -i --include -l --load -W; sed: -f --file -l --line-length;
//      xargs: -a --arg-file -d --delimiter -E -I -L --max-lines -n --max-args -P --max-procs -s
//      --max-chars); a program file (awk and sed -f / --file) means no hit; after "--" any next
//      token is a hit.
//   3. sandrun's additions, forms OpenClaw misses (a hit where OpenClaw reports none, never a
//      different description where it reports one): attached and clustered short flags
//      (python3 -Ic, node -pe, perl -ne / -le, ruby -ne, sed -ne, make -kf, php -rCODE,
//      lua/osascript -eCODE, awk -eCODE), `--eval=` / `--print=` for node, GNU long-option
//      abbreviations (awk --sou, sed --expr, make --mak), and awk -W source=....
// Callers pass the segment's argv after unwrapping dispatch wrappers (env, nice, timeout, ...);
// shells (`sh -c`) are not inline eval here: the shell-wrapper analysis handles them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandrun::policy {

// The description of the first inline-eval use in `argv`, OpenClaw's wording ("python3 -c",
// "node --eval", "perl -e", "awk inline program", "xargs inline command", "find -exec",
// "make -f", "php -r"); nullopt when there is none. The exe part is argv[0]'s basename,
// lowercased, as given ("python3.11 -c").
std::optional<std::string> DetectInlineEval(const std::vector<std::string>& argv);

// python python2 python3 pypy pypy3 node nodejs bun deno awk gawk mawk nawk ruby perl php lua
// osascript find make gmake sed gsed xargs (reference §5.7). `name` may be a path or a pattern:
// its basename is taken, the glob characters * ? [ ] removed, letters lowercased; a version
// suffix of digits and dots counts too (python3.11, perl5.36.0, lua5.4, node18).
bool IsInterpreterLike(std::string_view name);

// A shell, by its basename lowercased without a -static suffix or a version (ksh93, zsh5,
// bash-static): the POSIX ones below, and fish csh tcsh rc es elvish nu xonsh pwsh ion murex
// oil osh ysh scsh closh. busybox and toybox are multiplexers, not shells.
bool IsShellName(std::string_view name);

// The shells that read a -c payload with POSIX sh quoting and operators (the analyser's and
// RenderShellCommand's): sh bash zsh dash ksh mksh ash rbash yash posh lksh oksh loksh pdksh
// hush sash rksh bosh. Not fish (backslash escapes inside single quotes), csh and tcsh (history
// `!`, no newline in quotes) nor the other languages' shells.
bool IsPosixShellName(std::string_view name);

}  // namespace sandrun::policy
