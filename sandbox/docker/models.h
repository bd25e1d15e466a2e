// Typed requests and results of the Docker Engine API calls sandrun makes, with the JSON
// builders and parsers that translate them. Pure code: testable against recorded fixtures.
//
// Pattern of use:
//   ContainerSpec spec; spec.image = "sandrun-sandbox:minimal"; spec.host.network_mode = "none";
//   std::string body = BuildContainerCreateBody(spec);
//   SANDRUN_ASSIGN_OR_RETURN(ContainerInfo info, ParseContainerInspect(response.body));
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::docker {

struct PingInfo {
  std::string api_version;  // API-Version header
  std::string os_type;      // OSType header
};

struct VersionInfo {
  std::string version;          // engine version, e.g. 20.10.24+dfsg1
  std::string api_version;      // highest API version the engine speaks
  std::string min_api_version;  // lowest API version the engine accepts
  std::string os;
  std::string arch;
  std::string kernel_version;
};

struct ImageInfo {
  std::string id;
  std::vector<std::string> repo_tags;
  std::map<std::string, std::string> labels;
  int64_t size = 0;
  int64_t created = 0;  // unix seconds (list) or 0 (inspect gives a string)
};

// One HostConfig.Mounts entry of type "bind" (Docker refuses a missing source instead of
// creating it, as HostConfig.Binds would).
struct BindMount {
  std::string source;  // host path
  std::string target;  // container path
  bool read_only = false;
  std::string propagation;     // "" (engine default) | "private" | "rprivate"
  bool non_recursive = false;  // BindOptions.NonRecursive: mounts below the source stay out
};

// The HostConfig fields sandrun sets. Unset optionals are left out of the request.
struct HostConfig {
  std::string network_mode;  // "none" for sandboxes
  bool readonly_rootfs = false;
  std::vector<std::string> cap_drop;
  std::vector<std::string> cap_add;
  std::vector<std::string> security_opt;     // as the Engine API takes them (built by the executor)
  std::map<std::string, std::string> tmpfs;  // path -> mount options
  std::vector<std::string> binds;            // "host:container:ro"
  std::vector<BindMount> mounts;             // HostConfig.Mounts (type bind)
  std::optional<int64_t> pids_limit;
  std::optional<int64_t> memory;       // bytes
  std::optional<int64_t> memory_swap;  // bytes
  std::optional<int64_t> nano_cpus;    // 1e9 = 1 CPU
  std::optional<bool> init;
  bool auto_remove = false;
};

struct ContainerSpec {
  std::string image;
  std::vector<std::string> cmd;
  std::vector<std::string> entrypoint;
  std::vector<std::string> env;  // K=V
  std::map<std::string, std::string> labels;
  std::string working_dir;
  std::string user;
  std::string hostname;
  HostConfig host;
};

struct ContainerState {
  std::string status;  // created | running | paused | restarting | removing | exited | dead
  bool running = false;
  bool oom_killed = false;
  int64_t pid = 0;
  int64_t exit_code = 0;
  std::string error;
};

struct ContainerInfo {
  std::string id;
  std::string name;  // without the leading '/'
  std::string image;
  ContainerState state;
  std::map<std::string, std::string> labels;
  std::vector<std::string> cmd;
  HostConfig host;  // as the engine reports it
};

struct ContainerSummary {
  std::string id;
  std::vector<std::string> names;  // without leading '/'
  std::string image;
  std::string state;
  std::map<std::string, std::string> labels;
  int64_t created = 0;
};

struct ExecSpec {
  std::vector<std::string> cmd;
  std::vector<std::string> env;  // K=V
  std::string working_dir;
  std::string user;
  bool tty = false;
  bool attach_stdin = false;
  bool attach_stdout = true;
  bool attach_stderr = true;
  std::optional<std::pair<unsigned, unsigned>> console_size;  // {height, width}
};

struct ExecInfo {
  std::string id;
  std::string container_id;
  bool running = false;
  std::optional<int64_t> exit_code;  // null while running
  int64_t pid = 0;                   // host pid of the exec's process (0 when unknown)
};

// One progress message of a streamed image import ({"status":..} or {"error":..}).
struct ProgressMessage {
  std::string status;
  std::string error;
  std::string id;
};

// ---- request bodies ----
std::string BuildContainerCreateBody(const ContainerSpec& spec);
std::string BuildExecCreateBody(const ExecSpec& spec);
std::string BuildExecStartBody(bool tty, std::optional<std::pair<unsigned, unsigned>> console);

// ---- responses ----
// The engine's {"message": "..."} error text, or the body itself when it is not that JSON.
std::string ParseErrorMessage(std::string_view body);
Result<VersionInfo> ParseVersion(std::string_view body);
Result<std::string> ParseIdResponse(std::string_view body);  // {"Id": "..."}
Result<ImageInfo> ParseImageInspect(std::string_view body);
Result<std::vector<ImageInfo>> ParseImageList(std::string_view body);
Result<ContainerInfo> ParseContainerInspect(std::string_view body);
Result<std::vector<ContainerSummary>> ParseContainerList(std::string_view body);
Result<ExecInfo> ParseExecInspect(std::string_view body);
Result<int64_t> ParseWaitResponse(std::string_view body);  // {"StatusCode": N}
Result<ProgressMessage> ParseProgressMessage(std::string_view line);

// ---- query strings ----
// Percent-encodes for a URL query component (RFC 3986 unreserved characters kept).
std::string UrlEncode(std::string_view s);
// filters={"label":["k=v",...]} for container/image lists.
std::string LabelFilterQuery(const std::vector<std::string>& labels);

// ---- API versions ("1.41") ----
// Compares dotted versions numerically: <0, 0, >0.
int CompareApiVersions(std::string_view a, std::string_view b);
// The version the client should use: min(client_max, engine max), never below the engine's
// minimum; an error when the ranges do not overlap.
Result<std::string> NegotiateApiVersion(std::string_view client_min, std::string_view client_max,
                                        const VersionInfo& engine);

}  // namespace sandrun::docker
