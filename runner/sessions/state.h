// A session's life as an explicit state machine: every change of a session's phase goes through
// Transition, so which events are legal in which phase is written down in one place.
//
//   Starting --attach--> Foreground --background--> Background
//   Starting --adopt--> Background                (re-adopted after a server restart)
//   Starting --lose--> Lost                       (recorded running; its process is gone)
//   Foreground|Background --kill--> Killing       (SIGKILL sent; the end is still to come)
//   Foreground|Background|Killing --end(how)--> Exited | Failed | TimedOut   (Killed if Killing)
//   Background --release--> Released              (server shutdown: left running, not ours)
//   Released --end--> Released                    (what the detached process reports is dropped)
// Everything else is illegal (std::nullopt): e.g. attaching twice, killing an ended session,
// releasing a foreground run (its caller is going away: it is killed), adopting a live one.
#pragma once

#include <optional>

namespace sandrun::sessions {

enum class Phase {
  kStarting,    // registered, no process yet
  kForeground,  // running inside its yield window: the exec call is still waiting
  kBackground,  // running as a background session (listed, persisted, notified on exit)
  kKilling,     // killed by the process tool or a shutdown; waiting for the end
  kReleased,    // left running at shutdown; nothing of it reaches this server any more
  kExited,      // ended with an exit code (completed iff 0)
  kFailed,      // died from a signal, or ended without an exit status
  kTimedOut,    // its timeout fired and the tree was killed
  kKilled,      // ended after a kill
  kLost,        // recorded running before a restart, and it could not be re-adopted
};
const char* PhaseName(Phase phase);  // "starting" ... "lost"

enum class PhaseEvent {
  kAttach,      // the executor started the process
  kAdopt,       // the executor found it again after a restart
  kBackground,  // the yield window passed, or background was asked for
  kKill,
  kRelease,
  kLose,
  kEndExited,    // the process ended: exit code
  kEndSignaled,  // a signal
  kEndTimedOut,  // its timeout
  kEndAborted,   // no exit status
};
const char* PhaseEventName(PhaseEvent event);

// The phase after `event` in `from`, or std::nullopt when the event is illegal there.
std::optional<Phase> Transition(Phase from, PhaseEvent event);

// Still has (or may have) a process this server watches: Starting .. Killing.
bool IsLive(Phase phase);
// Ended for this server: Released and the end phases.
inline bool IsSettledPhase(Phase phase) { return !IsLive(phase); }

}  // namespace sandrun::sessions
