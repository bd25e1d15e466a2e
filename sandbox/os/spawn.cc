#include "sandbox/os/spawn.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

extern char** environ;

namespace sandrun {

Result<int> RunToCompletion(const std::vector<std::string>& argv, const RunOptions& options) {
  if (argv.empty()) return Error(ErrorCode::kInvalidArgument, "empty command");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // environ minus the keys options.env sets, then options.env.
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const auto& set : options.env) {
      size_t eq = set.find('=');
      if (entry.substr(0, entry.find('=') + 1) == std::string_view(set).substr(0, eq + 1)) {
        replaced = true;
      }
    }
    if (!replaced) env.push_back(*e);
  }
  for (const auto& set : options.env) env.push_back(const_cast<char*>(set.c_str()));
  env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.stdout_to_stderr) posix_spawn_file_actions_adddup2(&actions, 2, 1);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error::FromErrno(rc, "cannot run " + argv[0]);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Error::FromErrno(errno, "waitpid for " + argv[0]);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace sandrun
