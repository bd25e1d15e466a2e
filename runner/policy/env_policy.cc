#include "runner/policy/env_policy.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <set>
#include <string>

#include "runner/policy/shell_path.h"
#include "sandbox/base/strings.h"
#include "sandbox/executors/path_search.h"

namespace sandrun::policy {
namespace {

// blockedEverywhereKeys (reference §3.3, OpenClaw's host-env-security-policy.json): never
// accepted as overrides and stripped from the inherited env.
constexpr std::string_view kBlockedEverywhereKeys[] = {
    "NODE_OPTIONS",
    "NODE_PATH",
    "PYTHONHOME",
    "PYTHONPATH",
    "PERL5LIB",
    "PERL5OPT",
    "RUBYLIB",
    "RUBYOPT",
    "BASH_ENV",
    "ENV",
    "BROWSER",
    "GIT_EDITOR",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_EXEC_PATH",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_SEQUENCE_EDITOR",
    "GIT_TEMPLATE_DIR",
    "GIT_SSL_NO_VERIFY",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "CC",
    "CXX",
    "CARGO_BUILD_RUSTC",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "RUSTC_WRAPPER",
    "CMAKE_C_COMPILER",
    "CMAKE_CXX_COMPILER",
    "SHELL",
    "SHELLOPTS",
    "PS4",
    "GCONV_PATH",
    "IFS",
    "SSLKEYLOGFILE",
    "JAVA_OPTS",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "PYTHONBREAKPOINT",
    "DOTNET_STARTUP_HOOKS",
    "DOTNET_ADDITIONAL_DEPS",
    "GLIBC_TUNABLES",
    "MAVEN_OPTS",
    "MAKEFLAGS",
    "MFLAGS",
    "SBT_OPTS",
    "GRADLE_OPTS",
    "ANT_OPTS",
    "HGRCPATH",
    "EXINIT",
    "VIMINIT",
    "MYVIMRC",
    "GVIMINIT",
    "LUA_INIT",
    "LUA_INIT_5_1",
    "LUA_INIT_5_2",
    "LUA_INIT_5_3",
    "LUA_INIT_5_4",
    "EMACSLOADPATH",
    "RUBYSHELL",
    "GIT_HOOK_PATH",
    "SVN_EDITOR",
    "SVN_SSH",
    "BZR_EDITOR",
    "BZR_SSH",
    "BZR_PLUGIN_PATH",
    "SUDO_ASKPASS",
    "JULIA_EDITOR",
    "CONFIG_SITE",
    "CONFIG_SHELL",
    "CMAKE_TOOLCHAIN_FILE",
    "CATALINA_OPTS",
    "CORECLR_PROFILER",
    "HELM_PLUGINS",
    "PACKER_PLUGIN_PATH",
    "VAGRANT_VAGRANTFILE",
    "ERL_AFLAGS",
    "ERL_FLAGS",
    "ERL_ZFLAGS",
    "ELIXIR_ERL_OPTIONS",
    "R_ENVIRON",
    "R_PROFILE",
    "R_ENVIRON_USER",
    "R_PROFILE_USER",
    "HOSTALIASES",
};

// blockedOverrideOnlyKeys: the keys the reference names (OpenClaw's list has ~150). A call may
// not set them; the runner's own values are inherited. A few more of the same kinds (pagers,
// CA bundles, Docker client settings, code-loading paths) are added.
constexpr std::string_view kBlockedOverrideOnlyKeys[] = {
    "HOME",
    "ZDOTDIR",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "LESSOPEN",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "PROMPT_COMMAND",
    "HISTFILE",
    "OPENSSL_CONF",
    "PYTHONSTARTUP",
    "CLASSPATH",
    "CFLAGS",
    "LDFLAGS",
    "GOFLAGS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "GOPROXY",
    "GOPATH",
    "GOINSECURE",
    "VIRTUAL_ENV",
    "KUBECONFIG",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "DATABASE_URL",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "NPM_TOKEN",
    "SSH_AUTH_SOCK",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "GIT_PROXY_COMMAND",
    "LESSCLOSE",
    "MANPAGER",
    "GIT_PAGER",
    "PERLLIB",
    "PYTHONUSERBASE",
    "NODE_REPL_EXTERNAL_MODULE",
    // Options that make an allowlisted program run a command, carried by the environment
    // instead of argv (the exec-options table sees only argv): tar's TAR_OPTIONS
    // (--to-command, --use-compress-program), zip's ZIPOPT (-TT), rsync's remote shell, wget's
    // and curl's rc files, pagers' configs.
    "TAR_OPTIONS",
    "ZIPOPT",
    "UNZIP",
    "RSYNC_RSH",
    "RSYNC_CONNECT_PROG",
    "WGETRC",
    "CURL_HOME",
    "LESS",
    "LESSKEY",
    "LESSKEYIN",
    "SYSTEMD_PAGER",
    "SYSTEMD_LESS",
    "PSQL_PAGER",
    "MANOPT",
};

// The reference's `PIP_*`, `UV_*`, `GEM_*`, `XDG_CONFIG_*`, `AWS_*`, `ANSIBLE_*`, `TF_*`,
// `SSL_CERT_*` families, blocked as override prefixes (fail closed on family members the
// reference does not spell out).
constexpr std::string_view kBlockedOverrideOnlyFamilies[] = {
    "PIP_", "UV_", "GEM_", "XDG_CONFIG_", "AWS_", "ANSIBLE_", "TF_", "SSL_CERT_",
};

constexpr std::string_view kBlockedPrefixes[] = {"DYLD_", "LD_", "BASH_FUNC_"};
constexpr std::string_view kBlockedOverridePrefixes[] = {"GIT_CONFIG_", "NPM_CONFIG_",
                                                         "CARGO_REGISTRIES_", "TF_VAR_"};

template <size_t N>
bool Contains(const std::string_view (&list)[N], std::string_view key) {
  return std::find(std::begin(list), std::end(list), key) != std::end(list);
}

template <size_t N>
bool StartsWithAny(const std::string_view (&prefixes)[N], std::string_view key) {
  for (std::string_view p : prefixes) {
    if (key.substr(0, p.size()) == p) return true;
  }
  return false;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Primary collation weight of one byte in the root locale (CLDR order for ASCII): whitespace,
// then punctuation and symbols in CLDR's order, then digits, then letters (case folded). Other
// bytes sort after, by value.
int PrimaryWeight(unsigned char c) {
  static constexpr std::string_view kPunct = " \t_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
  size_t pos = kPunct.find(static_cast<char>(c));
  if (pos != std::string_view::npos) return 1 + static_cast<int>(pos);
  if (c >= '0' && c <= '9') return 100 + (c - '0');
  if (std::isalpha(c) != 0) return 200 + (std::tolower(c) - 'a');
  return 300 + c;
}

std::vector<std::string> SortedUnique(std::vector<std::string> keys) {
  std::sort(keys.begin(), keys.end(),
            [](const std::string& a, const std::string& b) { return LocaleLess(a, b); });
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::string JoinComma(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) out += ", ";
    out += keys[i];
  }
  return out;
}

}  // namespace

bool IsPortableEnvKey(std::string_view key) {
  if (key.empty()) return false;
  auto head = static_cast<unsigned char>(key[0]);
  if (!(std::isalpha(head) != 0 || head == '_') || head >= 0x80) return false;
  for (char ch : key.substr(1)) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80 || !(std::isalnum(c) != 0 || c == '_')) return false;
  }
  return true;
}

bool IsBlockedEverywhereKey(std::string_view upper_key) {
  return Contains(kBlockedEverywhereKeys, upper_key);
}

bool IsBlockedOverrideOnlyKey(std::string_view upper_key) {
  return Contains(kBlockedOverrideOnlyKeys, upper_key) ||
         StartsWithAny(kBlockedOverrideOnlyFamilies, upper_key);
}

bool HasBlockedPrefix(std::string_view upper_key) {
  return StartsWithAny(kBlockedPrefixes, upper_key);
}

bool HasBlockedOverridePrefix(std::string_view upper_key) {
  return StartsWithAny(kBlockedOverridePrefixes, upper_key);
}

bool IsDangerousOverrideKey(std::string_view upper_key) {
  return upper_key == "PATH" || IsBlockedEverywhereKey(upper_key) ||
         IsBlockedOverrideOnlyKey(upper_key) || HasBlockedPrefix(upper_key) ||
         HasBlockedOverridePrefix(upper_key);
}

bool IsDangerousInheritedKey(std::string_view upper_key) {
  return IsBlockedEverywhereKey(upper_key) || HasBlockedPrefix(upper_key);
}

bool LocaleLess(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int wa = PrimaryWeight(static_cast<unsigned char>(a[i]));
    int wb = PrimaryWeight(static_cast<unsigned char>(b[i]));
    if (wa != wb) return wa < wb;
  }
  if (a.size() != b.size()) return a.size() < b.size();
  // Equal up to case: lowercase first at the first difference (tertiary strength).
  for (size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    return std::islower(static_cast<unsigned char>(a[i])) != 0;
  }
  return false;
}

std::string FormatEnvViolation(std::vector<std::string> blocked_keys,
                               std::vector<std::string> invalid_keys) {
  std::vector<std::string> blocked = SortedUnique(std::move(blocked_keys));
  std::vector<std::string> invalid = SortedUnique(std::move(invalid_keys));
  const bool has_path = std::find(blocked.begin(), blocked.end(), "PATH") != blocked.end();
  if (has_path && blocked.size() == 1 && invalid.empty()) {
    return "Security Violation: Custom 'PATH' variable is forbidden during host execution.";
  }
  if (blocked.size() == 1 && invalid.empty()) {
    return "Security Violation: Environment variable '" + blocked[0] +
           "' is forbidden during host execution.";
  }
  std::vector<std::string> parts;
  if (!blocked.empty()) parts.push_back("blocked override keys: " + JoinComma(blocked));
  if (!invalid.empty()) {
    parts.push_back("invalid non-portable override keys: " + JoinComma(invalid));
  }
  std::string joined;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) joined += "; ";
    joined += parts[i];
  }
  if (has_path) {
    return "Security Violation: Custom 'PATH' variable is forbidden during host execution (" +
           joined + ").";
  }
  return "Security Violation: " + joined + ".";
}

std::optional<Error> CheckEnvNul(const EnvMap& env) {
  for (const auto& [key, value] : env) {
    if (value.find('\0') != std::string::npos || key.find('\0') != std::string::npos) {
      return Error::Refusal("security-violation", "Security Violation: Environment variable '" +
                                                      key + "' contains a NUL byte.");
    }
  }
  return std::nullopt;
}

Result<EnvMap> ValidateHostEnvOverrides(const EnvMap& overrides) {
  if (auto nul = CheckEnvNul(overrides)) return *nul;
  std::vector<std::string> blocked;
  std::vector<std::string> invalid;
  EnvMap accepted;
  for (const auto& [key, value] : overrides) {
    if (!IsPortableEnvKey(key)) {
      invalid.push_back(key);
      continue;
    }
    std::string upper = Upper(key);
    if (IsDangerousOverrideKey(upper)) {
      blocked.push_back(upper);
      continue;
    }
    accepted[key] = value;
  }
  if (!blocked.empty() || !invalid.empty()) {
    return Error::Refusal("security-violation", FormatEnvViolation(blocked, invalid));
  }
  return accepted;
}

Result<EnvMap> ValidateSandboxEnvOverrides(const EnvMap& overrides) {
  if (auto nul = CheckEnvNul(overrides)) return *nul;
  std::vector<std::string> invalid;
  for (const auto& entry : overrides) {
    if (!IsPortableEnvKey(entry.first)) invalid.push_back(entry.first);
  }
  if (!invalid.empty())
    return Error::Refusal("security-violation", FormatEnvViolation({}, invalid));
  return overrides;
}

EnvMap SanitizeInheritedEnv(const EnvMap& host_env) {
  EnvMap out;
  for (const auto& [key, value] : host_env) {
    if (!IsPortableEnvKey(key)) continue;  // cannot be exported safely either
    if (value.find('\0') != std::string::npos) continue;
    if (IsDangerousInheritedKey(Upper(key))) continue;
    out[key] = value;
  }
  return out;
}

std::vector<std::string> SplitPathList(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    if (colon == std::string_view::npos) colon = path.size();
    if (colon > start) out.emplace_back(path.substr(start, colon - start));
    start = colon + 1;
  }
  return out;
}

std::string JoinPathList(const std::vector<std::string>& entries) {
  std::string out;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += ":";
    out += entries[i];
  }
  return out;
}

std::vector<std::string> DedupePathEntries(const std::vector<std::string>& entries) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& e : entries) {
    if (e.empty() || !seen.insert(e).second) continue;
    out.push_back(e);
  }
  return out;
}

std::vector<std::string> NormalizePathPrepend(const std::vector<std::string>& entries,
                                              const std::string& home) {
  std::vector<std::string> out;
  for (const std::string& raw : entries) {
    std::string e = Trim(raw);
    if (!home.empty() && (e == "~" || e.rfind("~/", 0) == 0)) e = home + e.substr(1);
    // An entry with ':' is several entries; split so dedupe sees each.
    for (std::string& part : SplitPathList(e)) out.push_back(std::move(part));
  }
  return DedupePathEntries(out);
}

std::string MergeGatewayPath(std::string_view login_path, std::optional<std::string> base_path,
                             const std::vector<std::string>& prepend) {
  const std::string base = base_path.has_value() && !base_path->empty()
                               ? *base_path
                               : std::string(exec::kMinimalDaemonPath);
  return MergePath(login_path, base, prepend);
}

}  // namespace sandrun::policy
