#include "sandbox/executors/registry.h"

#include <string>
#include <utility>
#include <vector>

namespace sandrun::exec {
std::string TargetName(Target target) {
  switch (target) {
    case Target::kSandbox:
      return "sandbox";
    case Target::kGateway:
      return "gateway";
  }
  return "target " + std::to_string(static_cast<int>(target));
}

const char* UnavailableWire(Target target) {
  return target == Target::kSandbox ? "sandbox-unavailable" : "spawn-failed";
}

Target TargetOfKind(ProcessKind kind) {
  return kind == ProcessKind::kContainer ? Target::kSandbox : Target::kGateway;
}

void ExecutorRegistry::Register(Target target, Factory make) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[target] = Entry{std::move(make), nullptr};
}

Result<std::shared_ptr<Executor>> ExecutorRegistry::For(Target target) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(target);
  if (it == entries_.end() || !it->second.make) {
    return Error(ErrorCode::kNotFound,
                 "no executor is registered for " + TargetName(target) + ": nothing was run")
        .WithWire(UnavailableWire(target));
  }
  Entry& entry = it->second;
  if (!entry.made) {
    auto made = entry.make();
    if (!made) {
      return std::move(made)
          .error()
          .Wrap(TargetName(target) + " unavailable, nothing was run")
          .WithWire(UnavailableWire(target));
    }
    if (*made == nullptr) {
      return Error(ErrorCode::kInternal, "the " + TargetName(target) +
                                             " executor's factory made nothing: nothing was run")
          .WithWire(UnavailableWire(target));
    }
    entry.made = std::move(made).value();
  }
  return entry.made;
}

Executor* ExecutorRegistry::ForKind(ProcessKind kind) {
  auto made = For(TargetOfKind(kind));
  return made ? made->get() : nullptr;
}

std::vector<std::shared_ptr<Executor>> ExecutorRegistry::Made() {
  std::vector<std::shared_ptr<Executor>> made;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [target, entry] : entries_) {
    if (entry.made) made.push_back(entry.made);
  }
  return made;
}

void ExecutorRegistry::Shutdown() {
  for (auto& e : Made()) e->Shutdown();
}

void ExecutorRegistry::ConfigChanged() {
  for (auto& e : Made()) e->ConfigChanged();
}

}  // namespace sandrun::exec
