#include "runner/api/audit_sandbox_checks.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "sandbox/base/strings.h"

namespace sandrun::api {
namespace {

// A finding of one scope and what makes it the same as an inherited one: its id, its key below
// the scope and the value found there.
struct ScopedFinding {
  AuditFinding finding;
  std::string same_as;
};

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string JsonList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + Quoted(items[i]);
  return out + "]";
}

bool MatchesEverySender(const std::string& entry) {
  const std::string glob = Trim(entry);
  return !glob.empty() && glob.find_first_not_of('*') == std::string::npos;
}

// "cli: alice, telegram: *" (the providers with at least one sender); "" when none.
std::string AllowedSenders(const config::ElevatedSettings& elevated) {
  std::string out;
  for (const auto& [provider, senders] : elevated.allow_from) {
    std::string names;
    for (const std::string& s : senders) {
      if (!Trim(s).empty()) names += (names.empty() ? "" : ", ") + Trim(s);
    }
    if (!names.empty()) out += (out.empty() ? "" : "; ") + provider + ": " + names;
  }
  return out;
}

// What of these settings runs commands on the host, in words ("" when nothing does).
std::string HostUses(const config::AgentSettings& s) {
  std::vector<std::string> uses;
  const std::string host = Lower(Trim(s.exec.host));
  if (host == "gateway" || host == "node") {
    uses.push_back("tools.exec.host " + host);
  } else if (host == "auto" && s.sandbox.mode == config::SandboxMode::kOff) {
    uses.push_back("sandbox.mode off");
  } else if (host == "auto" && s.sandbox.mode == config::SandboxMode::kNonMain) {
    uses.push_back("sandbox.mode non-main (the main session)");
  }
  if (s.elevated.enabled && !AllowedSenders(s.elevated).empty()) {
    uses.push_back("tools.elevated (defaultLevel " + Quoted(s.elevated.default_level) + ")");
  }
  std::string out;
  for (const std::string& u : uses) out += (out.empty() ? "" : ", ") + u;
  return out;
}

class ScopeChecks {
 public:
  // `prefix`: "", "agents.<id>.", "tenants.<t>." or "tenants.<t>.agents.<id>.".
  // `host_reachable`: false for a tenant without hostExecution (no elevated findings).
  ScopeChecks(std::string prefix, bool host_reachable)
      : prefix_(std::move(prefix)), host_reachable_(host_reachable) {}

  std::vector<ScopedFinding> Run(const config::AgentSettings& s) {
    if (host_reachable_) Elevated(s.elevated);
    Docker(s.sandbox.docker);
    AllowedChoices(s.sandbox.allow);
    return std::move(out_);
  }

 private:
  void Add(std::string id, const char* severity, const std::string& key, const std::string& value,
           std::string message) {
    std::string same_as = id + "\n" + key + "\n" + value;
    out_.push_back({AuditFinding{std::move(id), severity, prefix_ + key, std::move(message)},
                    std::move(same_as)});
  }

  void Elevated(const config::ElevatedSettings& e) {
    if (!e.enabled) return;
    const std::string senders = AllowedSenders(e);
    const std::string level = Lower(Trim(e.default_level));
    if (level == "full" && !senders.empty()) {
      Add("elevated-default-full", "warn", "tools.elevated.defaultLevel", senders,
          prefix_ +
              "tools.elevated.enabled is true and defaultLevel is \"full\": every command "
              "of an allowed sender (" +
              senders +
              ") runs on this machine, outside the sandbox, with security=full and without "
              "approval, even when the call does not ask for elevated; set " +
              prefix_ + "tools.elevated.defaultLevel to \"ask\" (or \"off\")");
    }
    for (const auto& [provider, entries] : e.allow_from) {
      auto any = std::find_if(entries.begin(), entries.end(), MatchesEverySender);
      if (any == entries.end()) continue;
      const std::string key = "tools.elevated.allowFrom." + provider;
      Add("elevated-allow-from-any", "warn", key, Trim(*any) + "\n" + level,
          prefix_ + key + " holds " + Quoted(Trim(*any)) + ", which lets every sender of " +
              provider + " use elevated: its commands run on this machine, outside the sandbox" +
              (level == "full" ? ", without approval (defaultLevel \"full\")" : "") +
              "; list the senders who may, by name");
    }
  }

  // sandbox.allow.network: what a call may choose (issue 19) weakens the sandbox as the
  // configured network would, for whoever makes the call.
  void AllowedChoices(const config::SandboxAllowSettings& allow) {
    for (const std::string& entry : allow.network) {
      const std::string network = Trim(entry);
      if (Lower(network) == "none") continue;
      const std::string key = "sandbox.allow.network";
      Add("sandbox-allow-network", "warn", key, network,
          prefix_ + key + " holds " + Quoted(network) +
              ": any call may ask for it (exec --network " + network +
              "), and its commands can then reach that network (send the workspace away, "
              "fetch code); remove it unless the agents need the network");
    }
  }

  void Docker(const config::DockerSettings& d) {
    const bool drops_all = std::any_of(d.cap_drop.begin(), d.cap_drop.end(), [](const auto& c) {
      const std::string cap = Lower(Trim(c));
      return cap == "all" || cap == "cap_all";
    });
    if (!drops_all) {
      const std::string list = JsonList(d.cap_drop);
      Add("sandbox-cap-drop", "warn", "sandbox.docker.capDrop", list,
          prefix_ + "sandbox.docker.capDrop is " + list +
              ", which does not drop ALL: sandbox commands keep the engine's default "
              "capabilities (CHOWN, DAC_OVERRIDE, FOWNER, SETUID, SETGID, NET_RAW, ...), which "
              "a command running as root in the container can use; set it to [\"ALL\"]");
    }
    const std::string key = "sandbox.docker.network";
    const std::string network = Trim(d.network).empty() ? "none" : Trim(d.network);
    const std::string lower = Lower(network);
    if (lower == "host" || lower.starts_with("container:")) {
      Add("sandbox-network", "warn", key, network,
          prefix_ + key + " is " + Quoted(network) +
              ", which would share a network namespace the sandbox must not reach; sandrun "
              "refuses it, so every sandbox command fails; set it to "
              "\"none\"");
    } else if (lower != "none") {
      Add("sandbox-network", "warn", key, network,
          prefix_ + key + " is " + Quoted(network) +
              ": sandbox commands can reach that network and what it reaches (the internet, "
              "services of this machine), so a command can send the workspace away or fetch "
              "code; set it to \"none\" unless the agent needs the network");
    }
    for (const auto& [name, value] : {std::pair{"seccompProfile", &d.seccomp_profile},
                                      std::pair{"apparmorProfile", &d.apparmor_profile}}) {
      if (Lower(Trim(*value)) != "unconfined") continue;
      const std::string unconfined_key = std::string("sandbox.docker.") + name;
      Add("sandbox-unconfined", "warn", unconfined_key, "unconfined",
          prefix_ + unconfined_key +
              " is \"unconfined\": sandrun never starts a sandbox without its filters, so it "
              "refuses every sandbox command; remove the key (the default is " +
              (std::string(name) == "seccompProfile" ? "\"default\", profiles/seccomp/default.json"
                                                     : "the engine's profile") +
              ")");
    }
    if (!d.read_only_root) {
      Add("sandbox-writable-root", "info", "sandbox.docker.readOnlyRoot", "false",
          prefix_ +
              "sandbox.docker.readOnlyRoot is false: sandbox commands can change the "
              "container's own files (/bin, /etc, ...), and what one command plants there "
              "stays for the next commands of the same container; set it to true (writable "
              "places are the workspace and the tmpfs mounts)");
    }
  }

  std::string prefix_;
  bool host_reachable_;
  std::vector<ScopedFinding> out_;
};

// The findings of one scope that none of its `parents` has.
void AppendScope(const std::string& prefix, const config::AgentSettings& settings,
                 bool host_reachable, const std::vector<const config::AgentSettings*>& parents,
                 std::vector<AuditFinding>* out) {
  std::set<std::string> inherited;
  for (const config::AgentSettings* parent : parents) {
    if (parent == nullptr) continue;
    for (ScopedFinding& f : ScopeChecks("", host_reachable).Run(*parent)) {
      inherited.insert(std::move(f.same_as));
    }
  }
  for (ScopedFinding& f : ScopeChecks(prefix, host_reachable).Run(settings)) {
    if (!inherited.contains(f.same_as)) out->push_back(std::move(f.finding));
  }
}

void TenantHostExecution(const std::string& id, const config::TenantConfig& tenant,
                         std::vector<AuditFinding>* out) {
  std::string uses;
  if (std::string global = HostUses(tenant.global); !global.empty()) {
    uses = "its global level: " + global;
  }
  for (const auto& [agent, settings] : tenant.agents) {
    std::string mine = HostUses(settings);
    if (!mine.empty()) uses += (uses.empty() ? "" : "; ") + ("agent " + agent + ": " + mine);
  }
  const std::string key = "tenants." + id + ".hostExecution";
  out->push_back(AuditFinding{
      "tenant-host-execution", "warn", key,
      key + " is true: tenant " + id +
          "'s agents may run commands on this machine, outside the sandbox, wherever its "
          "settings say so (" +
          (uses.empty() ? "none does today, so any later config change that does takes effect"
                        : uses) +
          "); set it to false unless the tenant is trusted with this machine"});
}

}  // namespace

std::vector<AuditFinding> AuditHostAndSandbox(const config::Config& cfg) {
  std::vector<AuditFinding> out;
  AppendScope("", cfg.global, true, {}, &out);
  for (const auto& [id, settings] : cfg.agents) {
    AppendScope("agents." + id + ".", settings, true, {&cfg.global}, &out);
  }
  for (const auto& [id, tenant] : cfg.tenants) {
    if (tenant.host_execution) TenantHostExecution(id, tenant, &out);
    const std::string prefix = "tenants." + id + ".";
    AppendScope(prefix, tenant.global, tenant.host_execution, {&cfg.global}, &out);
    for (const auto& [agent, settings] : tenant.agents) {
      auto file_agent = cfg.agents.find(agent);
      AppendScope(prefix + "agents." + agent + ".", settings, tenant.host_execution,
                  {&tenant.global, file_agent == cfg.agents.end() ? nullptr : &file_agent->second},
                  &out);
    }
  }
  return out;
}

}  // namespace sandrun::api
