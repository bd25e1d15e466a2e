#include "runner/api/event_ring.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "runner/api/cli_context.h"
#include "sandbox/base/json.h"
#include "sandbox/os/file.h"

namespace sandrun::api {

class EventHub::Subscription {
 public:
  explicit Subscription(TenantFilter f) : filter(std::move(f)) {}
  TenantFilter filter;
  std::deque<StoredEvent> queue;
  std::condition_variable wake;
};

namespace {

constexpr char kRingFile[] = "ring.jsonl";
// What Open reads at most: the file is rewritten at twice the ring's size, so more is not ours.
constexpr size_t kMaxRingFileBytes = 4 * EventHub::kRingBytes;

std::string Line(const StoredEvent& e) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("id");
  w.Uint64(e.id);
  w.Key("tenant");
  WriteJsonString(w, e.tenant);
  w.Key("type");
  WriteJsonString(w, e.type);
  w.Key("data");
  w.RawValue(e.json.data(), e.json.size(), rapidjson::kObjectType);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::optional<StoredEvent> ParseLine(std::string_view line) {
  auto doc = ParseJson(line);
  if (!doc || !doc->IsObject()) return std::nullopt;
  const auto* id = JsonMember(*doc, "id");
  const auto* data = JsonMember(*doc, "data");
  if (id == nullptr || !id->IsUint64() || id->GetUint64() == 0 || data == nullptr ||
      !data->IsObject()) {
    return std::nullopt;
  }
  return StoredEvent{id->GetUint64(), JsonString(*doc, "tenant"), JsonString(*doc, "type"),
                     ToJson(*data)};
}

Result<UniqueFd> OpenForAppend(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    return Error(ErrorCode::kInvalidArgument, path + " is not a regular file of ours");
  }
  if ((st.st_mode & 077) != 0 && ::fchmod(fd.get(), 0600) != 0) {
    return Error::FromErrno(errno, "chmod " + path);
  }
  return fd;
}

// The ring file's events in order (a line that does not parse, e.g. torn by a crash, is
// skipped). A missing file is an empty ring.
Result<std::deque<StoredEvent>> ReadRing(const std::string& path) {
  std::deque<StoredEvent> events;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return events;
    return Error::FromErrno(errno, "open " + path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument, path + " is not a regular file");
  }
  std::string content;
  char buf[65536];
  while (content.size() < kMaxRingFileBytes) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "read " + path);
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
  }
  size_t start = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string::npos) break;  // a torn last line
    auto e = ParseLine(std::string_view(content).substr(start, end - start));
    start = end + 1;
    // Ids only increase; anything else is not a line we wrote in order.
    if (e && (events.empty() || e->id > events.back().id)) events.push_back(std::move(*e));
  }
  return events;
}

}  // namespace

Result<std::unique_ptr<EventHub>> EventHub::Open(const std::string& dir) {
  SANDRUN_RETURN_IF_ERROR(EnsureDirectory(dir, 0700));
  auto hub = std::make_unique<EventHub>();
  hub->path_ = dir + "/" + kRingFile;
  SANDRUN_ASSIGN_OR_RETURN(hub->ring_, ReadRing(hub->path_));
  while (hub->ring_.size() > kRingEvents) hub->ring_.pop_front();
  for (const StoredEvent& e : hub->ring_) hub->ring_bytes_ += e.json.size();
  if (!hub->ring_.empty()) hub->next_id_ = hub->ring_.back().id + 1;
  std::lock_guard<std::mutex> lock(hub->mu_);
  SANDRUN_RETURN_IF_ERROR(hub->RewriteLocked());
  return hub;
}

Status EventHub::RewriteLocked() {
  fd_.reset();
  std::string content;
  for (const StoredEvent& e : ring_) content += Line(e);
  SANDRUN_RETURN_IF_ERROR(WriteFileAtomic(path_, content, 0600, /*durable=*/false));
  SANDRUN_ASSIGN_OR_RETURN(fd_, OpenForAppend(path_));
  file_lines_ = ring_.size();
  return Ok();
}

void EventHub::AppendLocked(const StoredEvent& e) {
  ring_.push_back(e);
  ring_bytes_ += e.json.size();
  // Never empty: the newest event stays, and with it the next id after a restart.
  while (ring_.size() > 1 && (ring_.size() > kRingEvents || ring_bytes_ > kRingBytes)) {
    ring_bytes_ -= ring_.front().json.size();
    ring_.pop_front();
  }
  if (path_.empty()) return;
  if (file_lines_ + 1 >= 2 * kRingEvents || !fd_.valid()) {
    if (Status ok = RewriteLocked(); !ok) PrintWarning("event ring: " + ok.error().ToString());
    return;
  }
  const std::string line = Line(e);
  // One write per line (O_APPEND): a crash leaves at most a torn last line, which Open drops.
  ssize_t n = ::write(fd_.get(), line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    PrintWarning("event ring: writing " + path_ + ": " +
                 (n < 0 ? std::string(std::strerror(errno)) : "short write"));
    fd_.reset();  // rewritten whole at the next event
    return;
  }
  ++file_lines_;
}

namespace {

// Whether the subscriber's filter takes the event: its tenant, and its agent when one is named.
bool Takes(const TenantFilter& filter, const StoredEvent& e) {
  if (!filter.Takes(e.tenant)) return false;
  if (filter.agent.empty()) return true;
  auto doc = ParseJson(e.json);
  return doc && doc->IsObject() && JsonString(*doc, "agentId") == filter.agent;
}

}  // namespace

void EventHub::Publish(const std::string& tenant, const std::string& type,
                       const std::string& json) {
  std::lock_guard<std::mutex> lock(mu_);
  StoredEvent e{next_id_++, tenant, type, json};
  AppendLocked(e);
  for (auto& s : subscribers_) {
    if (!Takes(s->filter, e)) continue;
    if (s->queue.size() >= kMaxQueued) s->queue.pop_front();
    s->queue.push_back(e);
    s->wake.notify_all();
  }
}

std::shared_ptr<EventHub::Subscription> EventHub::Subscribe(const TenantFilter& filter,
                                                            std::optional<uint64_t> after) {
  auto s = std::make_shared<Subscription>(filter);
  std::lock_guard<std::mutex> lock(mu_);
  if (after) {
    for (const StoredEvent& e : ring_) {
      if (e.id <= *after || !Takes(filter, e)) continue;
      if (s->queue.size() >= kMaxQueued) s->queue.pop_front();
      s->queue.push_back(e);
    }
  }
  subscribers_.push_back(s);
  return s;
}

void EventHub::Unsubscribe(const std::shared_ptr<Subscription>& s) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.remove(s);
}

bool EventHub::Next(const std::shared_ptr<Subscription>& s, StoredEvent* out, int ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!s->wake.wait_for(lock, std::chrono::milliseconds(ms),
                        [&] { return closed_ || !s->queue.empty(); }) ||
      s->queue.empty()) {
    return false;
  }
  *out = std::move(s->queue.front());
  s->queue.pop_front();
  return true;
}

void EventHub::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  for (auto& s : subscribers_) s->wake.notify_all();
}

uint64_t EventHub::last_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_id_ - 1;
}

}  // namespace sandrun::api
