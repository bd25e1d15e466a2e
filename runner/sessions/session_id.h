// Session ids: OpenClaw's adjective-noun slugs ("swift-harbor") with its collision rules.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace sandrun::sessions {

// Returns a uniformly distributed value in [0, n). The seam for tests.
using RandomIndex = std::function<uint64_t(uint64_t n)>;

// A fresh id: adjective-noun; if taken, the same with -2 ... -12 (12 bases tried); then three
// words (adjective-noun-noun) the same way; then three words + "-" + 3 random [a-z0-9]; and if
// even that is taken, "-<base36 of now_ms>" appended to it.
std::string CreateSessionId(const std::function<bool(const std::string&)>& is_taken,
                            const RandomIndex& random, int64_t now_ms);

// The same with a thread-safe random source and the wall clock.
std::string CreateSessionId(const std::function<bool(const std::string&)>& is_taken);

// The word lists (42 adjectives, 54 nouns), for tests.
size_t SessionIdAdjectiveCount();
size_t SessionIdNounCount();

}  // namespace sandrun::sessions
