#include "runner/sessions/state.h"

#include <gtest/gtest.h>

namespace sandrun::sessions {
namespace {

using E = PhaseEvent;
using P = Phase;

struct Row {
  P from;
  E event;
  std::optional<P> to;  // nullopt: illegal
};

TEST(PhaseTest, TransitionTable) {
  const Row rows[] = {
      {P::kStarting, E::kAttach, P::kForeground},
      {P::kStarting, E::kAdopt, P::kBackground},
      {P::kStarting, E::kLose, P::kLost},
      {P::kStarting, E::kKill, std::nullopt},
      {P::kStarting, E::kEndExited, std::nullopt},
      {P::kForeground, E::kBackground, P::kBackground},
      {P::kForeground, E::kRelease, std::nullopt},
      {P::kForeground, E::kAttach, std::nullopt},
      {P::kForeground, E::kEndExited, P::kExited},
      {P::kBackground, E::kEndTimedOut, P::kTimedOut},
      {P::kBackground, E::kEndSignaled, P::kFailed},
      {P::kBackground, E::kEndAborted, P::kFailed},
      {P::kBackground, E::kKill, P::kKilling},
      {P::kBackground, E::kRelease, P::kReleased},
      {P::kBackground, E::kAdopt, std::nullopt},
      {P::kKilling, E::kEndSignaled, P::kKilled},
      {P::kKilling, E::kEndTimedOut, P::kKilled},
      {P::kKilling, E::kRelease, std::nullopt},
      {P::kReleased, E::kEndAborted, P::kReleased},
      {P::kReleased, E::kKill, std::nullopt},
      {P::kExited, E::kKill, std::nullopt},
      {P::kExited, E::kBackground, P::kExited},
      {P::kLost, E::kAdopt, std::nullopt},
      {P::kTimedOut, E::kEndExited, std::nullopt},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(Transition(r.from, r.event), r.to)
        << PhaseName(r.from) << " --" << PhaseEventName(r.event) << "-->";
  }
  EXPECT_TRUE(IsLive(P::kKilling));
  EXPECT_FALSE(IsLive(P::kReleased));
}

}  // namespace
}  // namespace sandrun::sessions
