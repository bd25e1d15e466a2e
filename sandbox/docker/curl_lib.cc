#include "sandbox/docker/curl_lib.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace sandrun::docker {
namespace {

template <typename F>
bool Bind(void* handle, const char* name, F& out, std::string& missing) {
  void* sym = ::dlsym(handle, name);
  if (sym == nullptr) {
    missing += std::string(missing.empty() ? "" : ", ") + name;
    return false;
  }
  out = reinterpret_cast<F>(sym);
  return true;
}

}  // namespace

Result<const CurlLib*> LoadCurl() {
  static CurlLib lib;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    // RTLD_LOCAL keeps libcurl's dependencies out of the global symbol namespace.
    void* handle = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      failure = std::string("cannot load libcurl: ") + (why ? why : "unknown error") +
                " (install libcurl4)";
      return;
    }
    std::string missing;
    bool ok = Bind(handle, "curl_global_init", lib.global_init, missing);
    ok &= Bind(handle, "curl_easy_init", lib.easy_init, missing);
    ok &= Bind(handle, "curl_easy_cleanup", lib.easy_cleanup, missing);
    ok &= Bind(handle, "curl_easy_reset", lib.easy_reset, missing);
    ok &= Bind(handle, "curl_easy_setopt", lib.easy_setopt, missing);
    ok &= Bind(handle, "curl_easy_perform", lib.easy_perform, missing);
    ok &= Bind(handle, "curl_easy_getinfo", lib.easy_getinfo, missing);
    ok &= Bind(handle, "curl_easy_strerror", lib.easy_strerror, missing);
    ok &= Bind(handle, "curl_easy_send", lib.easy_send, missing);
    ok &= Bind(handle, "curl_easy_recv", lib.easy_recv, missing);
    ok &= Bind(handle, "curl_slist_append", lib.slist_append, missing);
    ok &= Bind(handle, "curl_slist_free_all", lib.slist_free_all, missing);
    if (!ok) {
      failure = "libcurl lacks " + missing;
      return;
    }
    // Once, before any handle exists: curl_global_init is not thread-safe before 7.84.
    if (lib.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) failure = "curl_global_init failed";
  });
  if (!failure.empty()) return Error(ErrorCode::kInternal, failure);
  return &lib;
}

}  // namespace sandrun::docker
