#include "sandbox/executors/docker/container_kill.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "sandbox/executors/docker/exec_wrapper.h"
#include "sandbox/os/proc_table.h"

namespace sandrun::exec {
namespace {

// Runs inside the container as
//   sh -c SCRIPT sandrun-kill SIGNAL GRACE_MS MARKER HINT_PID ELAPSED_MS RECORD
// (MARKER is the whole environment entry, "SANDRUN_EXEC_TOKEN=<token>"; RECORD the exec
// wrapper's record, whose "P <pid>" first line names the exec's own process, or "")
// (see container_kill.h for what it takes and spares). Plain POSIX sh with builtins only in the
// loops (read, kill, eval), so it works with busybox ash and dash alike; grep -z finds the
// marker, one grep per scan. The process table is kept in variables named by pid (pp_<pid>
// parent, sd_<pid> session, st_<pid> state, t_<pid> start ticks, g_<pid> the scan that saw it);
// every name that goes through eval is built from digits only.
constexpr char kKillerScript[] = R"sh(sig=$1 grace=$2 marker=$3 hint=$4 elapsed=$5 rec=$6
me=$$ gen=0 c1= wrapper=
# The record is the exec's own (its user can rewrite it): a pid named there is taken only if it
# is an exec's own process (parent outside the container), of this user (kill can reach no
# other), which that user could signal itself anyway.
# Opened read-write (which never blocks, even on a FIFO swapped in under the name), then taken
# only if what is open is a regular file, and at most 64 bytes of it: the command cannot stall
# or flood the killer through its record.
if [ -n "$rec" ] && [ -f "$rec" ] && [ ! -L "$rec" ] && { exec 3<>"$rec"; } 2>/dev/null; then
  if [ -f /proc/self/fd/3 ]; then
    line=$(dd bs=64 count=1 2>/dev/null <&3)
    line=${line%%"
"*}
    tag=${line%% *} pid=${line#* }
    [ "$tag" != P ] || case $pid in ''|*[!0-9]*) ;; *) hint=$pid wrapper=$pid ;; esac
  fi
  exec 3<&-
fi
read -r c1 < /proc/1/comm
# Ticks since boot (USER_HZ = 100, as /proc/<pid>/stat counts them) from /proc/uptime's "s.cc".
now() { read -r up rest < /proc/uptime; t=$(( ${up%.*} * 100 + 1${up#*.} - 100 )); }
scan() {
  gen=$((gen + 1)) all= roots= keeper= kstart= carriers=
  [ -z "$marker" ] || carriers=$(grep -lzxF -e "$marker" /proc/[0-9]*/environ 2>/dev/null)
  for f in /proc/[0-9]*/stat; do
    p=${f#/proc/}; p=${p%/stat}
    case $p in ''|*[!0-9]*) continue ;; esac
    line=
    { while IFS= read -r l || [ -n "$l" ]; do line="$line $l"; l=; done; } 2>/dev/null < "$f"
    [ -n "$line" ] || continue
    set -- ${line##*) }
    [ $# -ge 20 ] || continue
    case $1 in Z|X|x) continue ;; esac
    eval "pp_$p=\$2 sd_$p=\$4 st_$p=\$1 t_$p=\${20} g_$p=$gen"
    all="$all $p"
    if [ "$2" = 0 ]; then
      [ "$p" = 1 ] || [ "$p" = "$me" ] || roots="$roots $p"
    elif [ "$2" = 1 ]; then
      if [ -z "$keeper" ] || [ "${20}" -lt "$kstart" ] || { [ "${20}" = "$kstart" ] && [ "$p" -lt "$keeper" ]; }; then
        keeper=$p kstart=${20}
      fi
    fi
  done
  # Without an init, pid 1 is the keeper and its children are orphans like any other.
  [ "$c1" != sleep ] || keeper=
}
# add PID [time]: into the set unless spared; its session joins too, unless it came by time.
add() {
  eval "m=\${m_$1} pp=\${pp_$1} sd=\${sd_$1}"
  [ "$m" != "$gen" ] || return 1
  case " 1 $me $keeper $others " in *" $1 "*) return 1 ;; esac
  [ "$pp" != "$me" ] || return 1
  eval "m_$1=$gen"
  set_list="$set_list $1" changed=1
  [ "$2" = time ] && return 0
  case " 0 1 $me $ksid " in *" $sd "*) ;; *) eval "s_$sd=$gen" ;; esac
  return 0
}
compute() {
  scan
  set_list= seeds= others= ksid=
  for c in $carriers; do
    c=${c#/proc/}; c=${c%/environ}
    case $c in ''|*[!0-9]*) continue ;; esac
    eval "h=\${g_$c}"; [ "$h" != "$gen" ] || seeds="$seeds $c"
  done
  case $hint in ''|0|*[!0-9]*) ;; *) eval "h=\${g_$hint}:\${pp_$hint}"; [ "$h" != "$gen:0" ] || seeds="$seeds $hint" ;; esac
  for r in $roots; do case " $seeds " in *" $r "*) ;; *) others="$others $r" ;; esac; done
  sweep=0; [ -n "$others" ] || sweep=1
  [ -z "$keeper" ] || eval "ksid=\${sd_$keeper}"
  for s in $seeds; do add "$s"; done
  changed=1
  while [ "$changed" = 1 ]; do
    changed=0
    for p in $all; do
      eval "m=\${m_$p} pp=\${pp_$p} sd=\${sd_$p} tp=\${t_$p}"
      [ "$m" != "$gen" ] || continue
      eval "pm=\${m_$pp} ss=\${s_$sd}"
      if [ "$pm" = "$gen" ] || [ "$ss" = "$gen" ]; then add "$p"
      elif [ "$sweep" = 1 ] && [ "$tp" -ge "$from" ]; then add "$p" time
      fi
    done
  done
}
now; from=$(( t - elapsed / 10 - 50 ))
if [ "$sig" != 9 ]; then
  compute; [ -n "$set_list" ] || exit 0
  targets=
  for p in $set_list; do [ "$p" = "$wrapper" ] || targets="$targets $p"; done
  [ -z "$targets" ] || kill -"$sig" $targets 2>/dev/null
  [ "$grace" -gt 0 ] || exit 0
  now; end=$(( t + grace / 10 ))
  while :; do
    sleep 0.05
    compute; [ -n "$set_list" ] || exit 0
    now; [ "$t" -lt "$end" ] || break
  done
fi
round=0
while [ "$round" -lt 40 ]; do
  round=$((round + 1))
  compute; [ -n "$set_list" ] || exit 0
  running=
  for p in $set_list; do eval "s=\${st_$p}"; case $s in T|t) ;; *) running="$running $p" ;; esac; done
  [ -n "$running" ] || break
  kill -STOP $running 2>/dev/null
done
kill -9 $set_list 2>/dev/null
i=0
while [ "$i" -lt 20 ]; do
  i=$((i + 1)); sleep 0.05
  compute; [ -n "$set_list" ] || exit 0
  kill -9 $set_list 2>/dev/null
done
echo "still alive after SIGKILL:$set_list"
exit 3)sh";

constexpr auto kKillerSlack = std::chrono::seconds(15);  // beyond the grace: exec start, scans

}  // namespace

Result<ExecTree> MarkExec(docker::ExecSpec& spec) {
  SANDRUN_ASSIGN_OR_RETURN(std::string token, NewTreeToken());
  const std::string key = std::string(kTreeTokenEnv) + "=";
  std::erase_if(spec.env, [&](const std::string& e) { return e.rfind(key, 0) == 0; });
  spec.env.push_back(key + token);
  ExecTree tree;
  tree.token = std::move(token);
  tree.user = spec.user;
  tree.created_at = Deadline::Clock::now();
  return tree;
}

Status KillContainerExecTree(docker::Client& client, const ExecTree& tree, int signal,
                             int64_t grace_ms) {
  grace_ms = std::max<int64_t>(grace_ms, 0);
  CallOptions opts{Deadline::After(std::chrono::milliseconds(grace_ms) + kKillerSlack), nullptr};
  // The exec's own process by pid: it then counts even if it removed the marker from its
  // environment. The killer takes it only if it is an exec's own process in that container.
  // A wrapped exec's record names it inside the container; without the wrapper, the engine's
  // host pid is mapped when the engine is local (a unix socket: its host pids are ours) and the
  // exec still runs.
  int64_t hint = 0;
  if (!tree.wrapped && client.endpoint().kind == docker::Endpoint::Kind::kUnix) {
    auto info = client.InspectExec(tree.exec_id, opts);
    if (info && info->running && info->pid > 0) {
      if (auto pid = docker::InContainerPid(info->pid)) hint = *pid;
    }
  }
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now() -
                                                                       tree.created_at)
                     .count();
  docker::ExecSpec killer;
  killer.cmd = {"/bin/sh",
                "-c",
                kKillerScript,
                "sandrun-kill",
                std::to_string(signal),
                std::to_string(grace_ms),
                tree.token.empty() ? std::string() : std::string(kTreeTokenEnv) + "=" + tree.token,
                std::to_string(hint),
                std::to_string(std::max<int64_t>(elapsed, 0)),
                tree.wrapped && !tree.token.empty() ? ExecRecordPath(tree.token) : std::string()};
  killer.user = tree.user;
  std::string output;
  auto code = client.RunExec(
      tree.container, killer,
      [&](docker::StreamKind, std::string_view bytes) {
        if (output.size() < 4096) output.append(bytes);
      },
      opts);
  if (!code) return std::move(code).error().Wrap("killing the exec's processes");
  if (*code != 0) {
    return Error(ErrorCode::kInternal, "killing the exec's processes: the killer exited " +
                                           std::to_string(*code) + ": " + output);
  }
  return Ok();
}

}  // namespace sandrun::exec
