// Which tenants' data a caller sees (events, metrics): one tenant, or every one (an admin
// without X-Sandrun-Tenant). A tenant never sees another's.
#pragma once

#include <string>
#include <utility>

namespace sandrun::api {

struct TenantFilter {
  bool all = false;
  std::string tenant;  // when !all
  static TenantFilter All() { return {true, ""}; }
  static TenantFilter Tenant(std::string id) { return {false, std::move(id)}; }
  bool Takes(const std::string& of_tenant) const { return all || of_tenant == tenant; }
};

}  // namespace sandrun::api
