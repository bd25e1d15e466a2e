#include "sandbox/harden/seccomp_profile.h"

#include <seccomp.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "sandbox/base/json.h"

namespace sandrun::harden {
namespace {

struct NamedAction {
  const char* name;
  SeccompAction action;
};
constexpr NamedAction kActions[] = {
    {"SCMP_ACT_ALLOW", SeccompAction::kAllow},
    {"SCMP_ACT_ERRNO", SeccompAction::kErrno},
    {"SCMP_ACT_KILL", SeccompAction::kKillThread},
    {"SCMP_ACT_KILL_THREAD", SeccompAction::kKillThread},
    {"SCMP_ACT_KILL_PROCESS", SeccompAction::kKillProcess},
    {"SCMP_ACT_TRAP", SeccompAction::kTrap},
    {"SCMP_ACT_LOG", SeccompAction::kLog},
};

struct NamedOp {
  const char* name;
  SeccompOp op;
};
constexpr NamedOp kOps[] = {
    {"SCMP_CMP_NE", SeccompOp::kNe},
    {"SCMP_CMP_LT", SeccompOp::kLt},
    {"SCMP_CMP_LE", SeccompOp::kLe},
    {"SCMP_CMP_EQ", SeccompOp::kEq},
    {"SCMP_CMP_GE", SeccompOp::kGe},
    {"SCMP_CMP_GT", SeccompOp::kGt},
    {"SCMP_CMP_MASKED_EQ", SeccompOp::kMaskedEq},
};

// Go (GOARCH) and kernel spellings of each architecture, as moby's profiles use them.
struct GoArch {
  const char* name;
  uint32_t scmp;
};
constexpr GoArch kGoArches[] = {
    {"amd64", SCMP_ARCH_X86_64},
    {"x86_64", SCMP_ARCH_X86_64},
    {"386", SCMP_ARCH_X86},
    {"x86", SCMP_ARCH_X86},
    {"x32", SCMP_ARCH_X32},
    {"arm", SCMP_ARCH_ARM},
    {"arm64", SCMP_ARCH_AARCH64},
    {"aarch64", SCMP_ARCH_AARCH64},
    {"mips", SCMP_ARCH_MIPS},
    {"mipsle", SCMP_ARCH_MIPSEL},
    {"mipsel", SCMP_ARCH_MIPSEL},
    {"mips64", SCMP_ARCH_MIPS64},
    {"mips64le", SCMP_ARCH_MIPSEL64},
    {"mipsel64", SCMP_ARCH_MIPSEL64},
    {"mips64n32", SCMP_ARCH_MIPS64N32},
    {"mips64len32", SCMP_ARCH_MIPSEL64N32},
    {"mipsel64n32", SCMP_ARCH_MIPSEL64N32},
    {"ppc", SCMP_ARCH_PPC},
    {"ppc64", SCMP_ARCH_PPC64},
    {"ppc64le", SCMP_ARCH_PPC64LE},
    {"s390", SCMP_ARCH_S390},
    {"s390x", SCMP_ARCH_S390X},
    {"riscv64", SCMP_ARCH_RISCV64},
};

const std::vector<std::string_view> kDangerous = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "chroot",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "reboot",
    "swapon",
    "swapoff",
    "iopl",
    "ioperm",
    "open_by_handle_at",
    "name_to_handle_at",
    "acct",
    "quotactl",
    "settimeofday",
    "clock_settime",
    "syslog",
    "lookup_dcookie",
    "uselib",
    "vm86",
    "vm86old",
    "fanotify_init",
    "sethostname",
    "setdomainname",
    "nfsservctl",
    "_sysctl",
};

// "SCMP_ARCH_X86_64" -> libseccomp's token, 0 when unknown.
uint32_t ScmpArchToken(const std::string& name) {
  constexpr std::string_view kPrefix = "SCMP_ARCH_";
  if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size()) return 0;
  std::string lower = name.substr(kPrefix.size());
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return seccomp_arch_resolve_name(lower.c_str());
}

bool IsCapName(const std::string& s) {
  return s.size() > 4 && s.rfind("CAP_", 0) == 0 && std::all_of(s.begin() + 4, s.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || c == '_';
         });
}

// Whether `text` contains `word` delimited by characters that cannot be part of a syscall name.
bool MentionsWord(std::string_view text, std::string_view word) {
  auto part = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  for (size_t pos = text.find(word); pos != std::string_view::npos;
       pos = text.find(word, pos + 1)) {
    bool left = pos == 0 || !part(text[pos - 1]);
    size_t end = pos + word.size();
    bool right = end >= text.size() || !part(text[end]);
    if (left && right) return true;
  }
  return false;
}

Result<SeccompAction> ParseAction(const SchemaChecker& check, const rapidjson::Value& obj,
                                  const std::string& where, const char* key) {
  SANDRUN_ASSIGN_OR_RETURN(std::string name, check.String(obj, where, key));
  for (const auto& a : kActions) {
    if (name == a.name) return a.action;
  }
  return check.Fail(
      SchemaChecker::Join(where, key),
      "unknown or unsupported action \"" + name +
          "\" (SCMP_ACT_ALLOW, SCMP_ACT_ERRNO, SCMP_ACT_KILL, "
          "SCMP_ACT_KILL_THREAD, SCMP_ACT_KILL_PROCESS, SCMP_ACT_TRAP, SCMP_ACT_LOG)");
}

Result<int> ParseErrnoRet(const SchemaChecker& check, const rapidjson::Value& obj,
                          const std::string& where, const char* key, SeccompAction action) {
  if (check.Optional(obj, key) == nullptr) return 1;
  if (action != SeccompAction::kErrno) {
    return check.Fail(SchemaChecker::Join(where, key), "only allowed with SCMP_ACT_ERRNO");
  }
  SANDRUN_ASSIGN_OR_RETURN(int64_t n, check.Int(obj, where, key, 1, 4095));
  return static_cast<int>(n);
}

Result<SeccompCondition> ParseCondition(const SchemaChecker& check, const rapidjson::Value& rule,
                                        const std::string& where, const char* key) {
  SeccompCondition cond;
  const rapidjson::Value* v = check.Optional(rule, key);
  if (v == nullptr) return cond;
  const std::string at = SchemaChecker::Join(where, key);
  SANDRUN_RETURN_IF_ERROR(check.Keys(*v, at, {"arches", "caps", "minKernel"}));
  if (check.Optional(*v, "arches") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(cond.arches, check.StringArray(*v, at, "arches"));
    for (size_t i = 0; i < cond.arches.size(); ++i) {
      bool known = std::any_of(std::begin(kGoArches), std::end(kGoArches),
                               [&](const GoArch& g) { return cond.arches[i] == g.name; });
      if (!known) {
        return check.Fail(SchemaChecker::Index(SchemaChecker::Join(at, "arches"), i),
                          "unknown architecture \"" + cond.arches[i] +
                              "\" (Go names: amd64, 386, x32, arm, arm64, mips, mipsel, mips64, "
                              "mipsel64, mips64n32, mipsel64n32, ppc64le, s390, s390x, riscv64)");
      }
    }
  }
  if (check.Optional(*v, "caps") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(cond.caps, check.StringArray(*v, at, "caps"));
    for (size_t i = 0; i < cond.caps.size(); ++i) {
      if (!IsCapName(cond.caps[i])) {
        return check.Fail(SchemaChecker::Index(SchemaChecker::Join(at, "caps"), i),
                          "expected a capability name like CAP_SYS_ADMIN");
      }
    }
  }
  if (check.Optional(*v, "minKernel") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(std::string text, check.String(*v, at, "minKernel"));
    int major = 0, minor = 0;
    size_t dot = text.find('.');
    auto digits = [](std::string_view s) {
      return !s.empty() && s.size() < 6 &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot == std::string::npos || !digits(std::string_view(text).substr(0, dot)) ||
        !digits(std::string_view(text).substr(dot + 1))) {
      return check.Fail(SchemaChecker::Join(at, "minKernel"),
                        "expected \"MAJOR.MINOR\" such as \"4.8\", got \"" + text + "\"");
    }
    major = std::stoi(text.substr(0, dot));
    minor = std::stoi(text.substr(dot + 1));
    cond.min_kernel = std::make_pair(major, minor);
  }
  return cond;
}

Result<SeccompArg> ParseArg(const SchemaChecker& check, const rapidjson::Value& v,
                            const std::string& at) {
  SANDRUN_RETURN_IF_ERROR(check.Keys(v, at, {"index", "value", "valueTwo", "op"}));
  SeccompArg arg;
  SANDRUN_ASSIGN_OR_RETURN(int64_t index, check.Int(v, at, "index", 0, 5));
  arg.index = static_cast<unsigned>(index);
  SANDRUN_ASSIGN_OR_RETURN(arg.value, check.Uint64(v, at, "value"));
  if (check.Optional(v, "valueTwo") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(arg.value_two, check.Uint64(v, at, "valueTwo"));
  }
  SANDRUN_ASSIGN_OR_RETURN(std::string op, check.String(v, at, "op"));
  bool found = false;
  for (const auto& o : kOps) {
    if (op == o.name) {
      arg.op = o.op;
      found = true;
    }
  }
  if (!found) {
    return check.Fail(
        SchemaChecker::Join(at, "op"),
        "unknown operator \"" + op + "\" (SCMP_CMP_EQ, NE, LT, LE, GT, GE or MASKED_EQ)");
  }
  return arg;
}

Result<SeccompRule> ParseRule(const SchemaChecker& check, const rapidjson::Value& v,
                              const std::string& at) {
  SANDRUN_RETURN_IF_ERROR(check.Keys(
      v, at, {"comment", "names", "action", "errnoRet", "args", "includes", "excludes"}));
  SeccompRule rule;
  SANDRUN_ASSIGN_OR_RETURN(rule.comment, check.String(v, at, "comment"));
  SANDRUN_ASSIGN_OR_RETURN(rule.names, check.StringArray(v, at, "names"));
  if (rule.names.empty()) return check.Fail(SchemaChecker::Join(at, "names"), "must not be empty");
  SANDRUN_ASSIGN_OR_RETURN(rule.action, ParseAction(check, v, at, "action"));
  SANDRUN_ASSIGN_OR_RETURN(rule.errno_ret, ParseErrnoRet(check, v, at, "errnoRet", rule.action));
  if (const rapidjson::Value* args = check.Optional(v, "args"); args != nullptr) {
    const std::string args_at = SchemaChecker::Join(at, "args");
    if (!args->IsArray()) return check.Fail(args_at, "expected an array");
    bool seen[6] = {};
    for (rapidjson::SizeType i = 0; i < args->Size(); ++i) {
      SANDRUN_ASSIGN_OR_RETURN(SeccompArg arg,
                               ParseArg(check, (*args)[i], SchemaChecker::Index(args_at, i)));
      if (seen[arg.index]) {
        return check.Fail(SchemaChecker::Index(args_at, i),
                          "argument " + std::to_string(arg.index) +
                              " is compared twice in one rule; libseccomp 2.5 refuses that: "
                              "write one rule per comparison");
      }
      seen[arg.index] = true;
      rule.args.push_back(arg);
    }
  }
  SANDRUN_ASSIGN_OR_RETURN(rule.includes, ParseCondition(check, v, at, "includes"));
  SANDRUN_ASSIGN_OR_RETURN(rule.excludes, ParseCondition(check, v, at, "excludes"));
  return rule;
}

Result<std::vector<SeccompArchEntry>> ParseArchMap(const SchemaChecker& check,
                                                   const rapidjson::Value& doc) {
  std::vector<SeccompArchEntry> out;
  const rapidjson::Value* map = check.Optional(doc, "archMap");
  if (map == nullptr) return out;
  if (!map->IsArray()) return check.Fail("archMap", "expected an array");
  std::set<std::string> natives;
  for (rapidjson::SizeType i = 0; i < map->Size(); ++i) {
    const std::string at = SchemaChecker::Index("archMap", i);
    const rapidjson::Value& e = (*map)[i];
    SANDRUN_RETURN_IF_ERROR(check.Keys(e, at, {"architecture", "subArchitectures"}));
    SeccompArchEntry entry;
    SANDRUN_ASSIGN_OR_RETURN(entry.architecture, check.String(e, at, "architecture"));
    if (ScmpArchToken(entry.architecture) == 0) {
      return check.Fail(SchemaChecker::Join(at, "architecture"),
                        "unknown architecture \"" + entry.architecture +
                            "\" (expected SCMP_ARCH_X86_64, SCMP_ARCH_AARCH64, ...)");
    }
    if (!natives.insert(entry.architecture).second) {
      return check.Fail(SchemaChecker::Join(at, "architecture"),
                        "\"" + entry.architecture + "\" is mapped twice");
    }
    if (check.Optional(e, "subArchitectures") != nullptr) {
      SANDRUN_ASSIGN_OR_RETURN(entry.sub_architectures,
                               check.StringArray(e, at, "subArchitectures"));
    }
    for (size_t k = 0; k < entry.sub_architectures.size(); ++k) {
      if (ScmpArchToken(entry.sub_architectures[k]) == 0) {
        return check.Fail(SchemaChecker::Index(SchemaChecker::Join(at, "subArchitectures"), k),
                          "unknown architecture \"" + entry.sub_architectures[k] + "\"");
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

Result<SeccompProfile> FromFile(ProfileFile file) {
  SchemaChecker check(file.path);
  const rapidjson::Value& doc = file.doc;
  SANDRUN_RETURN_IF_ERROR(check.Keys(
      doc, "", {"name", "description", "defaultAction", "defaultErrnoRet", "archMap", "syscalls"}));
  SeccompProfile p;
  p.path = file.path;
  p.name = file.name;
  p.description = file.description;
  SANDRUN_ASSIGN_OR_RETURN(p.default_action, ParseAction(check, doc, "", "defaultAction"));
  SANDRUN_ASSIGN_OR_RETURN(p.default_errno_ret,
                           ParseErrnoRet(check, doc, "", "defaultErrnoRet", p.default_action));
  SANDRUN_ASSIGN_OR_RETURN(p.arch_map, ParseArchMap(check, doc));
  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* syscalls, check.Required(doc, "", "syscalls"));
  if (!syscalls->IsArray()) return check.Fail("syscalls", "expected an array");
  for (rapidjson::SizeType i = 0; i < syscalls->Size(); ++i) {
    SANDRUN_ASSIGN_OR_RETURN(SeccompRule rule,
                             ParseRule(check, (*syscalls)[i], SchemaChecker::Index("syscalls", i)));
    p.rules.push_back(std::move(rule));
  }
  p.compact_json = ToJson(doc);
  return p;
}

}  // namespace

Result<SeccompProfile> LoadSeccompProfile(const std::string& profiles_dir,
                                          const std::string& name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, ReadProfileFile(profiles_dir, "seccomp", name));
  return FromFile(std::move(file));
}

Result<SeccompProfile> ParseSeccompProfile(std::string_view text, const std::string& path,
                                           const std::string& expected_name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, ParseProfileText(text, path, expected_name));
  return FromFile(std::move(file));
}

Result<std::string> LoadSeccompProfileJson(const std::string& profiles_dir,
                                           const std::string& name) {
  SANDRUN_ASSIGN_OR_RETURN(SeccompProfile profile, LoadSeccompProfile(profiles_dir, name));
  return std::move(profile.compact_json);
}

const std::vector<std::string_view>& DangerousSyscalls() { return kDangerous; }

std::vector<std::string> LintSeccompProfile(const SeccompProfile& profile) {
  std::vector<std::string> findings;
  std::set<std::string_view> named;
  for (size_t i = 0; i < profile.rules.size(); ++i) {
    const SeccompRule& rule = profile.rules[i];
    for (const std::string& name : rule.names) {
      named.insert(name);
      bool dangerous = std::find(kDangerous.begin(), kDangerous.end(), name) != kDangerous.end();
      if (dangerous && rule.action == SeccompAction::kAllow && !MentionsWord(rule.comment, name)) {
        findings.push_back(profile.path + ": syscalls[" + std::to_string(i) + "]: allows \"" +
                           name + "\" but its comment does not say why (name it in the comment)");
      }
    }
  }
  if (profile.default_action == SeccompAction::kAllow) {
    for (std::string_view name : kDangerous) {
      if (named.count(name) == 0 && !MentionsWord(profile.description, name)) {
        findings.push_back(profile.path + ": \"" + std::string(name) +
                           "\" is allowed by the default action but neither a rule nor the "
                           "description names it");
      }
    }
  }
  return findings;
}

const char* SeccompActionName(SeccompAction action) {
  for (const auto& a : kActions) {
    if (a.action == action) return a.name;
  }
  return "?";
}

bool GoArchMatches(std::string_view go_arch, uint32_t scmp_arch) {
  for (const auto& g : kGoArches) {
    if (go_arch == g.name) return g.scmp == scmp_arch;
  }
  return false;
}

}  // namespace sandrun::harden
