// The runtime's event hub (GET /v1/events): every session and approval event gets a sequence id
// (increasing, never reused across restarts) and its tenant, goes to the subscribers whose filter
// takes that tenant, and into a bounded ring kept on disk so a subscriber can resume with
// Last-Event-ID after a reconnect or a server restart (what is still in the ring after that id
// is replayed, then live events follow).
//
// On disk: $SANDRUN_HOME/events/ring.jsonl, one {"id","tenant","type","data"} line per event,
// appended through an fd opened with O_NOFOLLOW (0600). It holds the last kRingEvents events
// (and at most kRingBytes of them): once the file has twice that many lines it is rewritten
// (atomically) with the ones kept. Open rewrites it too, dropping a torn last line, and takes
// the next id after the newest one in it (the ring is never emptied, so ids go on increasing).
//
// Pattern of use (runtime.cc; serve.cc's /v1/events):
//   SANDRUN_ASSIGN_OR_RETURN(auto hub, EventHub::Open(state_dir + "/events"));
//   hub->Publish(tenant, "session.started", json);
//   auto sub = hub->Subscribe(TenantFilter::Tenant("acme"), last_event_id);
//   StoredEvent e; while (hub->Next(sub, &e, 15000)) write(e.type, e.json, e.id);
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "runner/api/tenant_filter.h"
#include "sandbox/base/result.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::api {

struct StoredEvent {
  uint64_t id = 0;
  std::string tenant;
  std::string type;  // "session.started", "exec.finished", "approval.requested", ...
  std::string json;  // the event's data (a JSON object)
};

class EventHub {
 public:
  static constexpr size_t kRingEvents = 4096;
  static constexpr size_t kRingBytes = 4u << 20;
  // Per subscriber: a slow one loses its oldest queued events instead of holding memory.
  static constexpr size_t kMaxQueued = 1000;

  class Subscription;

  // A hub with its ring under `dir` (created 0700). An error when the ring cannot be read,
  // created or written.
  static Result<std::unique_ptr<EventHub>> Open(const std::string& dir);
  // A hub without a ring (the one-shot CLI: nothing subscribes, nothing is kept).
  EventHub() = default;
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  void Publish(const std::string& tenant, const std::string& type, const std::string& json);
  // Subscribes with `filter`; with `after`, the ring's events after that id (that the filter
  // takes) are queued first, in order, and nothing published meanwhile is missed or doubled.
  std::shared_ptr<Subscription> Subscribe(const TenantFilter& filter,
                                          std::optional<uint64_t> after = std::nullopt);
  void Unsubscribe(const std::shared_ptr<Subscription>& s);
  // Waits up to `ms` for the next event; false on timeout or once closed.
  bool Next(const std::shared_ptr<Subscription>& s, StoredEvent* out, int ms);
  // Ends every wait (the server stops).
  void Close();

  uint64_t last_id() const;

 private:
  void AppendLocked(const StoredEvent& e);
  Status RewriteLocked();  // the ring file from `ring_`, then appended to again

  mutable std::mutex mu_;
  std::list<std::shared_ptr<Subscription>> subscribers_;
  std::deque<StoredEvent> ring_;
  size_t ring_bytes_ = 0;
  uint64_t next_id_ = 1;
  std::string path_;  // "" without a ring
  UniqueFd fd_;
  size_t file_lines_ = 0;
  bool closed_ = false;
};

}  // namespace sandrun::api
