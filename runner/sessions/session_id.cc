#include "runner/sessions/session_id.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <random>
#include <string_view>

namespace sandrun::sessions {
namespace {

// OpenClaw's word lists (src/agents/session-slug.ts).
constexpr std::string_view kAdjectives[] = {
    "amber", "briny", "brisk",  "calm",   "clear",  "cool",  "crisp",  "dawn",   "delta",
    "ember", "faint", "fast",   "fresh",  "gentle", "glow",  "good",   "grand",  "keen",
    "kind",  "lucky", "marine", "mellow", "mild",   "neat",  "nimble", "nova",   "oceanic",
    "plaid", "quick", "quiet",  "rapid",  "salty",  "sharp", "swift",  "tender", "tidal",
    "tidy",  "tide",  "vivid",  "warm",   "wild",   "young"};
constexpr std::string_view kNouns[] = {
    "atlas",    "basil",  "bison",   "bloom",   "breeze", "canyon",     "cedar",  "claw",
    "cloud",    "comet",  "coral",   "cove",    "crest",  "crustacean", "daisy",  "dune",
    "ember",    "falcon", "fjord",   "forest",  "glade",  "gulf",       "harbor", "haven",
    "kelp",     "lagoon", "lobster", "meadow",  "mist",   "nudibranch", "nexus",  "ocean",
    "orbit",    "otter",  "pine",    "prairie", "reef",   "ridge",      "river",  "rook",
    "sable",    "sage",   "seaslug", "shell",   "shoal",  "shore",      "slug",   "summit",
    "tidepool", "trail",  "valley",  "wharf",   "willow", "zephyr"};
constexpr int kAttempts = 12;
constexpr int kMaxSuffix = 12;

std::string Base(const RandomIndex& random, int words) {
  std::string s(kAdjectives[random(std::size(kAdjectives))]);
  s += "-";
  s += kNouns[random(std::size(kNouns))];
  if (words > 2) {
    s += "-";
    s += kNouns[random(std::size(kNouns))];
  }
  return s;
}

std::string Base36(uint64_t v) {
  constexpr std::string_view kDigits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v % 36]);
    v /= 36;
  } while (v != 0);
  return out;
}

}  // namespace

size_t SessionIdAdjectiveCount() { return std::size(kAdjectives); }
size_t SessionIdNounCount() { return std::size(kNouns); }

std::string CreateSessionId(const std::function<bool(const std::string&)>& is_taken,
                            const RandomIndex& random, int64_t now_ms) {
  for (int words = 2; words <= 3; ++words) {
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      std::string base = Base(random, words);
      if (!is_taken(base)) return base;
      for (int i = 2; i <= kMaxSuffix; ++i) {
        std::string candidate = base + "-" + std::to_string(i);
        if (!is_taken(candidate)) return candidate;
      }
    }
  }
  constexpr std::string_view kAlnum = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string fallback = Base(random, 3) + "-";
  for (int i = 0; i < 3; ++i) fallback += kAlnum[random(kAlnum.size())];
  if (!is_taken(fallback)) return fallback;
  return fallback + "-" + Base36(static_cast<uint64_t>(now_ms < 0 ? 0 : now_ms));
}

std::string CreateSessionId(const std::function<bool(const std::string&)>& is_taken) {
  // Fresh kernel randomness for every draw, no generator shared between callers: a process-wide
  // generator's state could be learned from one tenant's ids and predict another's.
  RandomIndex random = [](uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // rejection sampling: no modulo bias
    for (;;) {
      uint64_t v = 0;
      ssize_t got = ::getrandom(&v, sizeof(v), 0);
      if (got != static_cast<ssize_t>(sizeof(v))) {
        if (got < 0 && errno == EINTR) continue;
        v = std::random_device{}();  // getrandom unavailable: still per call, still unshared
        v = (v << 32) ^ std::random_device{}();
      }
      if (v < limit) return v % n;
    }
  };
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  return CreateSessionId(is_taken, random, static_cast<int64_t>(now));
}

}  // namespace sandrun::sessions
