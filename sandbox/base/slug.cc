#include "sandbox/base/slug.h"

#include <cctype>

#include "sandbox/base/sha256.h"

namespace sandrun {
namespace {

std::string_view TrimSpace(std::string_view key) {
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.front()))) {
    key.remove_prefix(1);
  }
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.remove_suffix(1);
  return key;
}

// The readable part: the slug rule without the hash.
std::string SlugBase(std::string_view key) {
  std::string slug;
  bool in_run = false;
  for (char ch : key) {
    auto c = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (ok) {
      slug.push_back(c);
      in_run = false;
    } else if (!in_run) {
      slug.push_back('-');
      in_run = true;
    }
  }
  size_t start = slug.find_first_not_of('-');
  slug =
      start == std::string::npos ? "" : slug.substr(start, slug.find_last_not_of('-') - start + 1);
  if (slug.size() > 32) slug.resize(32);
  if (slug.empty()) slug = "session";
  return slug;
}

}  // namespace

std::string SlugifyScopeKey(std::string_view key) {
  key = TrimSpace(key);
  return SlugBase(key) + "-" +
         Sha256Hex(key.empty() ? std::string_view("session") : key).substr(0, 8);
}

std::string ScopeKeyHash(std::string_view key) { return Sha256Hex(key); }

std::string ScopeDirName(std::string_view key) { return SlugBase(key) + "-" + ScopeKeyHash(key); }

}  // namespace sandrun
