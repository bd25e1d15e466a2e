// Test clean-up of host mounts: a test home may hold sandrun's scratch mounts (and, after a
// crash, staging mounts); they are detached before the directory is removed.
#pragma once

#include <sys/mount.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sandrun::testing {

// The mount points at or below `dir` (from /proc/self/mountinfo), deepest first.
inline std::vector<std::string> MountPointsBelow(const std::string& dir) {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point == dir || point.rfind(dir + "/", 0) == 0) out.push_back(point);
  }
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

// Detaches everything mounted at or below `dir`; returns how many mounts there were.
inline size_t DetachMountsBelow(const std::string& dir) {
  std::vector<std::string> points = MountPointsBelow(dir);
  for (const std::string& p : points) ::umount2(p.c_str(), MNT_DETACH);
  return points.size();
}

}  // namespace sandrun::testing
