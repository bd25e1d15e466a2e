// A private directory under /tmp for one test, removed with everything in it at the end.
//
// Pattern of use:
//   testing::TempDir tmp("tokens");        // /tmp/sandrun-tokens-XXXXXX, mode 0700
//   std::string path = tmp.path() + "/tokens.json";
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace sandrun::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& what) {
    std::string templ = "/tmp/sandrun-" + what + "-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp " + templ);
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace sandrun::testing
