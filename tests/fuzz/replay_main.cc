// Runs a libFuzzer target over built-in seed inputs, so the target is built and exercised by
// every compiler (g++ has no libFuzzer); clang builds the real fuzzer from the same source.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main() {
  std::vector<std::string> seeds = {
      std::string("\x05\x01\x00\x00\x00\x00\x00\x00\x03"
                  "abc",
                  12),
      std::string("\x00\x02\x00\x00\x00\x00\x00\x00\x00", 9),
      std::string("\x03garbage"),
      std::string("\x0a\x01\x00\x00\x00\x00\x00\x00\x10short", 14),
      std::string(300, '\x01'),
  };
  uint32_t x = 12345;  // xorshift: deterministic pseudo-random inputs
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    size_t len = (x % 64) + 1;
    for (size_t j = 0; j < len; ++j) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      s.push_back(static_cast<char>(j % 9 == 1 ? x % 3 : (j % 9 > 1 && j % 9 < 5) ? 0 : x & 0xff));
    }
    seeds.push_back(s);
  }
  for (const auto& s : seeds) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  std::printf("replayed %zu inputs\n", seeds.size());
  return 0;
}
