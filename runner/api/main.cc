// sandrun: the command-line entry point. Everything else is a library (runner/api/cli.h).
#include <cstdio>
#include <exception>

#include "runner/api/cli.h"

int main(int argc, char** argv) {
  try {
    return sandrun::api::RunCli(argc, argv);
  } catch (const std::exception& e) {
    // Our code returns errors as values; this catches only the standard library's throws.
    std::fprintf(stderr, "sandrun: internal error: %s\n", e.what());
    return 1;
  }
}
