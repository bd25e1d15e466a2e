// Pending approvals across a restart (issue 15): the runtime records who asked with each pending
// approval (PrincipalToJson) and, at start, restores every tenant's recorded pending approvals
// into the broker. Each call is decided again under the config in force, in the name of who
// asked; one that no longer needs an operator (or whose record cannot be read back) is dropped
// with an approval.resolved event and a "dropped" record, never lost silently.
//
// Pattern of use (Runtime::Start):
//   RestoreReport r = RestorePendingApprovals(state_dir, *broker, [&](const Principal& who,
//       const policy::ExecRequest& req) { return RebuildPendingApproval(..., who.tenant); });
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/api/approval_broker.h"
#include "runner/api/runtime.h"
#include "runner/policy/exec_request.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

std::string PrincipalToJson(const Principal& who);
Result<Principal> PrincipalFromJson(std::string_view json);

using RebuildFn = std::function<Result<PendingApproval>(const Principal& who,
                                                        const policy::ExecRequest& request)>;

struct RestoreReport {
  int restored = 0;
  int dropped = 0;
  std::vector<std::string> warnings;  // tenants whose record could not be read
};
// Tenant "" and every tenants/<id>/ under `state_dir`.
RestoreReport RestorePendingApprovals(const std::string& state_dir, ApprovalBroker& broker,
                                      const RebuildFn& rebuild);

}  // namespace sandrun::api
