// Spawner: one long-lived thread that starts the children of its owner, so that a child armed
// with the parent-death signal (SpawnOptions::die_with_parent) dies with the runner, and not
// with whichever thread happened to ask for it.
//
// Pattern of use:
//   Spawner spawner;                       // owned by what owns the children (HostExecutor)
//   SANDRUN_ASSIGN_OR_RETURN(Subprocess proc, spawner.Spawn(opts));   // from any thread
//
// Why: PR_SET_PDEATHSIG fires when the *thread* that created the child exits, not the process.
// A server starts background sessions from the worker thread of one HTTP request; spawned
// there, the session would be SIGKILLed as soon as that request's thread ends. Every Spawn
// therefore runs on the spawner's own thread, started on first use; it blocks every signal, so
// the runner's signal handling is not disturbed.
//
// Lifetime: the thread lives as long as the Spawner. Destroying it ends the thread, and with
// it every child still running that was started with die_with_parent: the Spawner must outlive
// the children it started that should keep running (its owner's children are owned by the
// owner's sessions and destroyed before it). Children started with die_with_parent == false
// are not tied to it. Spawns are serialized (each takes ~0.5 ms); Spawn may be called from
// any thread, but not after or during the destructor.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "sandbox/base/result.h"
#include "sandbox/os/subprocess.h"

namespace sandrun {

class Spawner {
 public:
  Spawner() = default;
  ~Spawner();
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  // Subprocess::Spawn(options), run on the spawner's thread; blocks until it returns.
  Result<Subprocess> Spawn(const SpawnOptions& options);

 private:
  struct Request;
  void Loop();

  std::mutex mu_;
  std::condition_variable work_;  // a request was queued, or the destructor runs
  std::condition_variable done_;  // a request was answered
  std::deque<Request*> queue_;
  bool stopping_ = false;
  std::thread thread_;  // started by the first Spawn
};

}  // namespace sandrun
