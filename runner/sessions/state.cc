#include "runner/sessions/state.h"

namespace sandrun::sessions {

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kStarting:
      return "starting";
    case Phase::kForeground:
      return "foreground";
    case Phase::kBackground:
      return "background";
    case Phase::kKilling:
      return "killing";
    case Phase::kReleased:
      return "released";
    case Phase::kExited:
      return "exited";
    case Phase::kFailed:
      return "failed";
    case Phase::kTimedOut:
      return "timed-out";
    case Phase::kKilled:
      return "killed";
    case Phase::kLost:
      return "lost";
  }
  return "lost";
}

const char* PhaseEventName(PhaseEvent event) {
  switch (event) {
    case PhaseEvent::kAttach:
      return "attach";
    case PhaseEvent::kAdopt:
      return "adopt";
    case PhaseEvent::kBackground:
      return "background";
    case PhaseEvent::kKill:
      return "kill";
    case PhaseEvent::kRelease:
      return "release";
    case PhaseEvent::kLose:
      return "lose";
    case PhaseEvent::kEndExited:
      return "end-exited";
    case PhaseEvent::kEndSignaled:
      return "end-signaled";
    case PhaseEvent::kEndTimedOut:
      return "end-timed-out";
    case PhaseEvent::kEndAborted:
      return "end-aborted";
  }
  return "end-aborted";
}

bool IsLive(Phase phase) {
  return phase == Phase::kStarting || phase == Phase::kForeground || phase == Phase::kBackground ||
         phase == Phase::kKilling;
}

namespace {

bool IsEnd(PhaseEvent e) {
  return e == PhaseEvent::kEndExited || e == PhaseEvent::kEndSignaled ||
         e == PhaseEvent::kEndTimedOut || e == PhaseEvent::kEndAborted;
}

Phase EndPhase(PhaseEvent e) {
  switch (e) {
    case PhaseEvent::kEndExited:
      return Phase::kExited;
    case PhaseEvent::kEndTimedOut:
      return Phase::kTimedOut;
    default:
      return Phase::kFailed;
  }
}

}  // namespace

std::optional<Phase> Transition(Phase from, PhaseEvent event) {
  switch (from) {
    case Phase::kStarting:
      if (event == PhaseEvent::kAttach) return Phase::kForeground;
      if (event == PhaseEvent::kAdopt) return Phase::kBackground;
      if (event == PhaseEvent::kLose) return Phase::kLost;
      return std::nullopt;
    case Phase::kForeground:
    case Phase::kBackground:
      if (event == PhaseEvent::kBackground) return Phase::kBackground;  // idempotent
      if (event == PhaseEvent::kKill) return Phase::kKilling;
      if (event == PhaseEvent::kRelease && from == Phase::kBackground) return Phase::kReleased;
      if (IsEnd(event)) return EndPhase(event);
      return std::nullopt;
    case Phase::kKilling:
      if (event == PhaseEvent::kBackground || event == PhaseEvent::kKill) return Phase::kKilling;
      if (IsEnd(event)) return Phase::kKilled;
      return std::nullopt;
    case Phase::kReleased:
      if (IsEnd(event)) return Phase::kReleased;
      return std::nullopt;
    case Phase::kExited:
    case Phase::kFailed:
    case Phase::kTimedOut:
    case Phase::kKilled:
    case Phase::kLost:
      // A run that ended inside its yield window may still be backgrounded (it is listed).
      if (event == PhaseEvent::kBackground) return from;
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace sandrun::sessions
