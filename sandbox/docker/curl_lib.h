// libcurl, loaded on first use with dlopen instead of at program start: linking it pulls in
// ~30 shared libraries (TLS, HTTP/2, LDAP, Kerberos, ...) that cost 5-15 ms at every start of
// the binary, which host-only commands (a gateway exec, --help) would pay for nothing.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(const CurlLib* curl, LoadCurl());
//   CURL* h = curl->easy_init();
#pragma once

#include <curl/curl.h>

#include "sandbox/base/result.h"

namespace sandrun::docker {

struct CurlLib {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  void (*easy_reset)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);  // pass long, pointers, curl_off_t only
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  const char* (*easy_strerror)(CURLcode);
  CURLcode (*easy_send)(CURL*, const void*, size_t, size_t*);
  CURLcode (*easy_recv)(CURL*, void*, size_t, size_t*);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

// Loads libcurl (libcurl.so.4) and runs curl_global_init once per process; thread-safe. The
// error says which library or symbol is missing.
Result<const CurlLib*> LoadCurl();

}  // namespace sandrun::docker
