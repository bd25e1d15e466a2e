// SHA-256 (FIPS 180-4), for content hashes (image recipes, config hashes, slugs). Not for
// secrets: no constant-time guarantees are needed or given.
//
// Pattern of use:
//   Sha256 h; h.Update(a); h.Update(b); std::string hex = h.HexDigest();
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sandrun {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  std::array<uint8_t, 32> Digest();  // finishes the hash; call once
  std::string HexDigest();           // finishes the hash; lowercase hex

 private:
  void Block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_len_ = 0;
};

// Hex SHA-256 of one string.
std::string Sha256Hex(std::string_view data);

}  // namespace sandrun
