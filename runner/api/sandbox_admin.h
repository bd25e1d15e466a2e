// A tenant's sandbox containers, for its operators through the server (issue 14):
//   GET    /v1/sandboxes          {"sandboxes":[{"name","scope","state","image"}]}
//   DELETE /v1/sandboxes/{name}   removes it (recreated on next use); {"removed": name}
// A container is the tenant's when it carries this state dir's instance id and the tenant's
// `sandrun.tenant` label (tenant "": no such label, the local server's own). Another tenant's
// container, a container of another instance and a name nobody has answer exactly alike
// (404 sandbox-not-found): a tenant cannot learn what others run. Removing one also releases
// scratch images left without a container, as `sandrun sandbox recreate` does.
//
// Pattern of use (the Runtime):
//   RuntimeReply r = ListSandboxes(state_dir, who.tenant);
//   RuntimeReply r = RemoveSandbox(state_dir, who.tenant, name);
#pragma once

#include <string>

#include "runner/api/runtime.h"

namespace sandrun::api {

RuntimeReply ListSandboxes(const std::string& state_dir, const std::string& tenant);
RuntimeReply RemoveSandbox(const std::string& state_dir, const std::string& tenant,
                           const std::string& name);

}  // namespace sandrun::api
