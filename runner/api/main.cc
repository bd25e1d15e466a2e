// sandrun: the command-line entry point. Everything else is a library (runner/api/cli.h).
#include <sys/prctl.h>

#include <cstdio>
#include <exception>

#include "runner/api/cli.h"

int main(int argc, char** argv) {
  // Not dumpable: a host command of the same uid cannot open /proc/<runner>/root, /mem or /fd
  // (ptrace access rules), which would lead around the mount namespace it is confined in.
  // Commands are dumpable again after their execve.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  try {
    return sandrun::api::RunCli(argc, argv);
  } catch (const std::exception& e) {
    // Our code returns errors as values; this catches only the standard library's throws.
    std::fprintf(stderr, "sandrun: internal error: %s\n", e.what());
    return 1;
  }
}
