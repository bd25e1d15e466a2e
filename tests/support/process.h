// Runs a program as a test would from a shell: captures stdout and stderr, measures time.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sandrun::testing {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
  double seconds = 0;
};

// `env` entries are set (or, with an empty value, unset) on top of the test's environment.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env = {},
                         const std::string& stdin_text = "");

// The sandrun binary under test, with the given arguments.
ProcessResult RunSandrun(const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env = {});

}  // namespace sandrun::testing
