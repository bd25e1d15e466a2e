#include "sandbox/executors/host/login_path.h"

#include <pwd.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <utility>

#include "sandbox/base/json.h"
#include "sandbox/base/sha256.h"
#include "sandbox/base/strings.h"
#include "sandbox/executors/host/host_executor.h"
#include "sandbox/os/file.h"

namespace sandrun::exec {
namespace {

// os.homedir(): $HOME, else the password database.
std::string HomeDirectory() {
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return home;
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr) {
    return found->pw_dir;
  }
  return "/";
}

// The last PATH=... among NUL-separated KEY=VALUE records. Text a profile printed before the
// first record ends up in front of the first key; a key has no newline, so it is cut there.
std::optional<std::string> FindPath(std::string_view records) {
  std::optional<std::string> path;
  while (!records.empty()) {
    size_t nul = records.find('\0');
    std::string_view record = records.substr(0, nul);
    records = nul == std::string_view::npos ? std::string_view() : records.substr(nul + 1);
    size_t eq = record.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = record.substr(0, eq);
    if (size_t nl = key.rfind('\n'); nl != std::string_view::npos) key.remove_prefix(nl + 1);
    if (key == "PATH") path = std::string(record.substr(eq + 1));
  }
  return path;
}

}  // namespace

bool IsTrustedLoginShell(std::string_view shell, std::string_view etc_shells) {
  if (shell.empty() || shell.front() != '/') return false;
  // Normalised, as node's path.normalize(shell) === shell: no empty, "." or ".." components.
  for (std::string_view rest = shell.substr(1);;) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  while (!etc_shells.empty()) {
    size_t nl = etc_shells.find('\n');
    const std::string line = Trim(etc_shells.substr(0, nl));
    etc_shells = nl == std::string_view::npos ? std::string_view() : etc_shells.substr(nl + 1);
    if (!line.empty() && line.front() != '#' && line == shell) return true;
  }
  return false;
}

Result<std::string> ProbeLoginPath(const std::string& shell_env, std::chrono::milliseconds timeout,
                                   std::map<std::string, std::string> env) {
  std::string requested(Trim(shell_env));
  Result<std::string> etc_shells = ReadFile("/etc/shells", 1 << 20);
  std::string shell = etc_shells && IsTrustedLoginShell(requested, *etc_shells)
                          ? requested
                          : std::string("/bin/sh");
  // A login shell reads its profile from HOME (and zsh from ZDOTDIR): pin them to the user's.
  env.erase("ZDOTDIR");
  env["HOME"] = HomeDirectory();

  SpawnOptions spawn;
  spawn.path = shell;
  spawn.argv = {shell, "-l", "-c", "env -0"};
  for (const auto& [key, value] : env) spawn.env.push_back(key + "=" + value);
  spawn.stdin_mode = SpawnOptions::Stdin::kNull;

  RunLimits limits;
  limits.timeout_ms = timeout.count() > 0 ? timeout.count() : kDefaultLoginProbeTimeout.count();
  limits.kill_grace_ms = 0;  // nothing to save: SIGKILL right after SIGTERM
  limits.max_output_chars = 1;
  std::string captured;
  bool overflow = false;
  LiveSink sink = [&](Stream stream, std::string_view bytes) {
    if (stream != Stream::kStdout || overflow) return;
    if (captured.size() + bytes.size() > kLoginProbeMaxOutput) {
      overflow = true;
      return;
    }
    captured.append(bytes);
  };
  SANDRUN_ASSIGN_OR_RETURN(ExecOutcome outcome, RunSubprocess(spawn, limits, sink, nullptr));
  std::string what = "login shell PATH probe (" + shell + " -l -c 'env -0')";
  switch (outcome.status) {
    case ExecOutcome::Status::kTimedOut:
      return Error(ErrorCode::kTimeout,
                   what + " timed out after " + std::to_string(limits.timeout_ms) + " ms");
    case ExecOutcome::Status::kSignaled:
      return Error(ErrorCode::kIo,
                   what + " was killed by signal " + std::to_string(outcome.signal));
    case ExecOutcome::Status::kAborted:
      return Error(ErrorCode::kIo, what + " ended without an exit status");
    case ExecOutcome::Status::kExited:
      break;
  }
  if (outcome.exit_code != 0) {
    return Error(ErrorCode::kIo, what + " exited with code " + std::to_string(outcome.exit_code));
  }
  if (overflow) {
    return Error(ErrorCode::kIo,
                 what + " printed more than " + std::to_string(kLoginProbeMaxOutput) + " bytes");
  }
  std::optional<std::string> path = FindPath(captured);
  if (!path) return Error(ErrorCode::kNotFound, what + " printed no PATH");
  return *path;
}

namespace {

// What a login shell's PATH depends on, as one string to hash.
std::string LoginPathKey(const std::string& shell_env,
                         const std::map<std::string, std::string>& env) {
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  std::string home = get("HOME");
  std::string key = "v1\n" + shell_env + "\n" + std::to_string(::getuid()) + "\n" + home + "\n" +
                    get("PATH") + "\n";
  std::vector<std::string> files = {
      "/etc/profile",      "/etc/environment",      "/etc/bash.bashrc",
      "/etc/zsh/zprofile", "/etc/zsh/zshenv",       "/etc/zprofile",
      "/etc/zshenv",       "/etc/fish/config.fish", "/etc/shells"};
  for (const char* f : {"/.profile", "/.bash_profile", "/.bash_login", "/.bashrc", "/.zprofile",
                        "/.zshenv", "/.zshrc", "/.zlogin", "/.config/fish/config.fish"}) {
    files.push_back(home + f);
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/etc/profile.d", ec)) {
    files.push_back(entry.path().string());
  }
  files.push_back("/etc/profile.d");
  for (const auto& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) {
      key += f + " -\n";
    } else {
      key += f + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec) + "\n";
    }
  }
  return Sha256Hex(key);
}

}  // namespace

Result<std::string> CachedLoginPath(const std::string& shell_env, std::chrono::milliseconds timeout,
                                    const std::map<std::string, std::string>& env) {
  // Keyed by everything the PATH depends on: a second user of this process (another HOME,
  // SHELL or base PATH) or a changed start-up file never gets an earlier caller's result.
  static std::mutex mu;
  static std::map<std::string, Result<std::string>> memo;
  const std::string key = LoginPathKey(shell_env, env);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  Result<std::string> probed = ProbeLoginPath(shell_env, timeout, env);
  std::lock_guard<std::mutex> lock(mu);
  if (memo.size() >= 64) memo.clear();  // a bound, not a working-set guess
  return memo.emplace(key, std::move(probed)).first->second;
}

namespace {
// A failed probe (a hung or broken profile) is remembered this long, so one-shot calls do not
// each wait the whole probe timeout; a changed start-up file changes the key at once.
constexpr std::chrono::seconds kFailedProbeMaxAge{300};
}  // namespace

Result<std::string> DiskCachedLoginPath(const std::string& cache_file, const std::string& shell_env,
                                        std::chrono::milliseconds timeout,
                                        const std::map<std::string, std::string>& env,
                                        std::chrono::seconds max_age) {
  std::string key = LoginPathKey(shell_env, env);
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  if (auto text = ReadFile(cache_file, 1u << 20); text) {
    if (auto doc = ParseJson(*text); doc && doc->IsObject() && JsonString(*doc, "key") == key) {
      const int64_t age = now - JsonInt(*doc, "createdAt");
      if (const auto* error = JsonMember(*doc, "error");
          error != nullptr && error->IsString() && age >= 0 && age < kFailedProbeMaxAge.count()) {
        // A recent failure with the same start-up files: do not wait for it again.
        return Error(ErrorCode::kTimeout, std::string(error->GetString()) + " (remembered for " +
                                              std::to_string(kFailedProbeMaxAge.count()) +
                                              " s or until a shell start-up file changes)");
      }
      if (JsonMember(*doc, "path") != nullptr && age >= 0 && age < max_age.count()) {
        return JsonString(*doc, "path");
      }
    }
  }
  Result<std::string> probed = ProbeLoginPath(shell_env, timeout, env);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("key");
  w.String(key.c_str());
  w.Key("createdAt");
  w.Int64(now);
  if (probed) {
    w.Key("path");
    w.String(probed->c_str(), static_cast<rapidjson::SizeType>(probed->size()));
  } else {
    w.Key("error");
    const std::string message = probed.error().ToString();
    w.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
  }
  w.EndObject();
  std::filesystem::path parent = std::filesystem::path(cache_file).parent_path();
  if (EnsureDirectory(parent.string(), 0700)) {
    (void)WriteFileAtomic(cache_file, std::string(buffer.GetString(), buffer.GetSize()), 0600,
                          /*durable=*/false);
  }
  return probed;
}

}  // namespace sandrun::exec
