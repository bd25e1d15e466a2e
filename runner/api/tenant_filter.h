// Which tenants' data a caller sees (events, metrics): one tenant, or every one (an admin
// without X-Sandrun-Tenant), and for events maybe one agent. A tenant never sees another's.
#pragma once

#include <string>
#include <utility>

namespace sandrun::api {

struct TenantFilter {
  bool all = false;
  std::string tenant;  // when !all
  // Events only: "" any agent of the tenant; else only the events of that agent (their agentId;
  // an event without one is not taken). An agent token's stream is its own agent's.
  std::string agent;
  static TenantFilter All() { return {true, "", ""}; }
  static TenantFilter Tenant(std::string id) { return {false, std::move(id), ""}; }
  bool Takes(const std::string& of_tenant) const { return all || of_tenant == tenant; }
};

}  // namespace sandrun::api
