#include "sandbox/docker/models.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>

#include "sandbox/base/json.h"

namespace sandrun::docker {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Key(Writer& w, const char* key) { w.Key(key); }
void Str(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void StringArray(Writer& w, const char* key, const std::vector<std::string>& values) {
  Key(w, key);
  w.StartArray();
  for (const auto& v : values) Str(w, v);
  w.EndArray();
}

void StringMap(Writer& w, const char* key, const std::map<std::string, std::string>& values) {
  Key(w, key);
  w.StartObject();
  for (const auto& [k, v] : values) {
    Str(w, k);
    Str(w, v);
  }
  w.EndObject();
}

void WriteHostConfig(Writer& w, const HostConfig& h) {
  w.StartObject();
  if (!h.network_mode.empty()) {
    Key(w, "NetworkMode");
    Str(w, h.network_mode);
  }
  Key(w, "ReadonlyRootfs");
  w.Bool(h.readonly_rootfs);
  if (!h.cap_drop.empty()) StringArray(w, "CapDrop", h.cap_drop);
  if (!h.cap_add.empty()) StringArray(w, "CapAdd", h.cap_add);
  if (!h.security_opt.empty()) StringArray(w, "SecurityOpt", h.security_opt);
  if (!h.tmpfs.empty()) StringMap(w, "Tmpfs", h.tmpfs);
  if (!h.binds.empty()) StringArray(w, "Binds", h.binds);
  if (!h.mounts.empty()) {
    Key(w, "Mounts");
    w.StartArray();
    for (const BindMount& m : h.mounts) {
      w.StartObject();
      Key(w, "Type");
      Str(w, "bind");
      Key(w, "Source");
      Str(w, m.source);
      Key(w, "Target");
      Str(w, m.target);
      Key(w, "ReadOnly");
      w.Bool(m.read_only);
      if (!m.propagation.empty() || m.non_recursive) {
        Key(w, "BindOptions");
        w.StartObject();
        if (!m.propagation.empty()) {
          Key(w, "Propagation");
          Str(w, m.propagation);
        }
        if (m.non_recursive) {
          Key(w, "NonRecursive");
          w.Bool(true);
        }
        w.EndObject();
      }
      w.EndObject();
    }
    w.EndArray();
  }
  if (h.pids_limit) {
    Key(w, "PidsLimit");
    w.Int64(*h.pids_limit);
  }
  if (h.memory) {
    Key(w, "Memory");
    w.Int64(*h.memory);
  }
  if (h.memory_swap) {
    Key(w, "MemorySwap");
    w.Int64(*h.memory_swap);
  }
  if (h.nano_cpus) {
    Key(w, "NanoCpus");
    w.Int64(*h.nano_cpus);
  }
  if (h.init) {
    Key(w, "Init");
    w.Bool(*h.init);
  }
  if (h.auto_remove) {
    Key(w, "AutoRemove");
    w.Bool(true);
  }
  w.EndObject();
}

void WriteConsoleSize(Writer& w, std::optional<std::pair<unsigned, unsigned>> console) {
  if (!console) return;
  Key(w, "ConsoleSize");
  w.StartArray();
  w.Uint(console->first);
  w.Uint(console->second);
  w.EndArray();
}

std::string Finish(const rapidjson::StringBuffer& buffer) {
  return std::string(buffer.GetString(), buffer.GetSize());
}

Result<rapidjson::Document> ParseObject(std::string_view body, const char* what) {
  JsonParseOptions options;
  options.source_name = what;
  auto doc = ParseJson(body, options);
  if (!doc) {
    Error e = std::move(doc).error();
    e.code = ErrorCode::kProtocol;
    return e;
  }
  if (!doc->IsObject()) return Error(ErrorCode::kProtocol, std::string(what) + ": not an object");
  return doc;
}

HostConfig ParseHostConfig(const rapidjson::Value& v) {
  HostConfig h;
  h.network_mode = JsonString(v, "NetworkMode");
  h.readonly_rootfs = JsonBool(v, "ReadonlyRootfs");
  h.cap_drop = JsonStringArray(v, "CapDrop");
  h.cap_add = JsonStringArray(v, "CapAdd");
  h.security_opt = JsonStringArray(v, "SecurityOpt");
  h.tmpfs = JsonStringMap(v, "Tmpfs");
  h.binds = JsonStringArray(v, "Binds");
  if (const auto* mounts = JsonMember(v, "Mounts"); mounts && mounts->IsArray()) {
    for (const auto& m : mounts->GetArray()) {
      if (JsonString(m, "Type") != "bind") continue;
      BindMount b;
      b.source = JsonString(m, "Source");
      b.target = JsonString(m, "Target");
      b.read_only = JsonBool(m, "ReadOnly");
      if (const auto* o = JsonMember(m, "BindOptions"); o && o->IsObject()) {
        b.propagation = JsonString(*o, "Propagation");
        b.non_recursive = JsonBool(*o, "NonRecursive");
      }
      h.mounts.push_back(std::move(b));
    }
  }
  if (const auto* m = JsonMember(v, "PidsLimit"); m && m->IsInt64()) h.pids_limit = m->GetInt64();
  if (const auto* m = JsonMember(v, "Memory"); m && m->IsInt64()) h.memory = m->GetInt64();
  if (const auto* m = JsonMember(v, "MemorySwap"); m && m->IsInt64()) h.memory_swap = m->GetInt64();
  if (const auto* m = JsonMember(v, "NanoCpus"); m && m->IsInt64()) h.nano_cpus = m->GetInt64();
  if (const auto* m = JsonMember(v, "Init"); m && m->IsBool()) h.init = m->GetBool();
  h.auto_remove = JsonBool(v, "AutoRemove");
  return h;
}

std::string StripSlash(std::string name) {
  if (!name.empty() && name.front() == '/') name.erase(0, 1);
  return name;
}

}  // namespace

std::string BuildContainerCreateBody(const ContainerSpec& spec) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Key(w, "Image");
  Str(w, spec.image);
  if (!spec.cmd.empty()) StringArray(w, "Cmd", spec.cmd);
  if (!spec.entrypoint.empty()) StringArray(w, "Entrypoint", spec.entrypoint);
  if (!spec.env.empty()) StringArray(w, "Env", spec.env);
  if (!spec.labels.empty()) StringMap(w, "Labels", spec.labels);
  if (!spec.working_dir.empty()) {
    Key(w, "WorkingDir");
    Str(w, spec.working_dir);
  }
  if (!spec.user.empty()) {
    Key(w, "User");
    Str(w, spec.user);
  }
  if (!spec.hostname.empty()) {
    Key(w, "Hostname");
    Str(w, spec.hostname);
  }
  // With NetworkMode "none" there is nothing to attach to; say so explicitly.
  if (spec.host.network_mode == "none") {
    Key(w, "NetworkDisabled");
    w.Bool(true);
  }
  Key(w, "HostConfig");
  WriteHostConfig(w, spec.host);
  w.EndObject();
  return Finish(buffer);
}

std::string BuildExecCreateBody(const ExecSpec& spec) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Key(w, "AttachStdin");
  w.Bool(spec.attach_stdin);
  Key(w, "AttachStdout");
  w.Bool(spec.attach_stdout);
  Key(w, "AttachStderr");
  w.Bool(spec.attach_stderr);
  Key(w, "Tty");
  w.Bool(spec.tty);
  WriteConsoleSize(w, spec.console_size);
  StringArray(w, "Cmd", spec.cmd);
  if (!spec.env.empty()) StringArray(w, "Env", spec.env);
  if (!spec.working_dir.empty()) {
    Key(w, "WorkingDir");
    Str(w, spec.working_dir);
  }
  if (!spec.user.empty()) {
    Key(w, "User");
    Str(w, spec.user);
  }
  w.EndObject();
  return Finish(buffer);
}

std::string BuildExecStartBody(bool tty, std::optional<std::pair<unsigned, unsigned>> console) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Key(w, "Detach");
  w.Bool(false);
  Key(w, "Tty");
  w.Bool(tty);
  WriteConsoleSize(w, console);
  w.EndObject();
  return Finish(buffer);
}

std::string ParseErrorMessage(std::string_view body) {
  auto doc = ParseJson(body);
  if (doc && doc->IsObject()) {
    std::string m = JsonString(*doc, "message");
    if (!m.empty()) return m;
  }
  std::string text(body);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

Result<VersionInfo> ParseVersion(std::string_view body) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, "/version"));
  VersionInfo v;
  v.version = JsonString(doc, "Version");
  v.api_version = JsonString(doc, "ApiVersion");
  v.min_api_version = JsonString(doc, "MinAPIVersion");
  v.os = JsonString(doc, "Os");
  v.arch = JsonString(doc, "Arch");
  v.kernel_version = JsonString(doc, "KernelVersion");
  if (v.api_version.empty()) return Error(ErrorCode::kProtocol, "/version: no ApiVersion");
  return v;
}

Result<std::string> ParseIdResponse(std::string_view body) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, "create response"));
  std::string id = JsonString(doc, "Id");
  if (id.empty()) return Error(ErrorCode::kProtocol, "create response: no Id");
  return id;
}

Result<ImageInfo> ParseImageInspect(std::string_view body) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, "image inspect"));
  ImageInfo info;
  info.id = JsonString(doc, "Id");
  info.repo_tags = JsonStringArray(doc, "RepoTags");
  info.size = JsonInt(doc, "Size");
  if (const auto* config = JsonMember(doc, "Config"))
    info.labels = JsonStringMap(*config, "Labels");
  if (info.id.empty()) return Error(ErrorCode::kProtocol, "image inspect: no Id");
  return info;
}

Result<std::vector<ImageInfo>> ParseImageList(std::string_view body) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  if (!doc.IsArray()) return Error(ErrorCode::kProtocol, "image list: not an array");
  std::vector<ImageInfo> out;
  for (const auto& item : doc.GetArray()) {
    ImageInfo info;
    info.id = JsonString(item, "Id");
    info.repo_tags = JsonStringArray(item, "RepoTags");
    info.labels = JsonStringMap(item, "Labels");
    info.size = JsonInt(item, "Size");
    info.created = JsonInt(item, "Created");
    out.push_back(std::move(info));
  }
  return out;
}

Result<ContainerInfo> ParseContainerInspect(std::string_view body) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, "container inspect"));
  ContainerInfo info;
  info.id = JsonString(doc, "Id");
  info.name = StripSlash(JsonString(doc, "Name"));
  info.image = JsonString(doc, "Image");
  if (const auto* state = JsonMember(doc, "State")) {
    info.state.status = JsonString(*state, "Status");
    info.state.running = JsonBool(*state, "Running");
    info.state.oom_killed = JsonBool(*state, "OOMKilled");
    info.state.pid = JsonInt(*state, "Pid");
    info.state.exit_code = JsonInt(*state, "ExitCode");
    info.state.error = JsonString(*state, "Error");
  }
  if (const auto* config = JsonMember(doc, "Config")) {
    info.labels = JsonStringMap(*config, "Labels");
    info.cmd = JsonStringArray(*config, "Cmd");
  }
  if (const auto* host = JsonMember(doc, "HostConfig")) info.host = ParseHostConfig(*host);
  if (info.id.empty()) return Error(ErrorCode::kProtocol, "container inspect: no Id");
  return info;
}

Result<std::vector<ContainerSummary>> ParseContainerList(std::string_view body) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  if (!doc.IsArray()) return Error(ErrorCode::kProtocol, "container list: not an array");
  std::vector<ContainerSummary> out;
  for (const auto& item : doc.GetArray()) {
    ContainerSummary s;
    s.id = JsonString(item, "Id");
    for (auto& n : JsonStringArray(item, "Names")) s.names.push_back(StripSlash(std::move(n)));
    s.image = JsonString(item, "Image");
    s.state = JsonString(item, "State");
    s.labels = JsonStringMap(item, "Labels");
    s.created = JsonInt(item, "Created");
    out.push_back(std::move(s));
  }
  return out;
}

Result<ExecInfo> ParseExecInspect(std::string_view body) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, "exec inspect"));
  ExecInfo info;
  info.id = JsonString(doc, "ID");
  info.container_id = JsonString(doc, "ContainerID");
  info.running = JsonBool(doc, "Running");
  info.pid = JsonInt(doc, "Pid");
  if (const auto* code = JsonMember(doc, "ExitCode"); code && code->IsInt64()) {
    info.exit_code = code->GetInt64();
  }
  return info;
}

Result<int64_t> ParseWaitResponse(std::string_view body) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(body, "wait response"));
  const auto* code = JsonMember(doc, "StatusCode");
  if (!code || !code->IsInt64()) return Error(ErrorCode::kProtocol, "wait response: no StatusCode");
  if (const auto* err = JsonMember(doc, "Error"); err && err->IsObject()) {
    std::string m = JsonString(*err, "Message");
    if (!m.empty()) return Error(ErrorCode::kDockerApi, m);
  }
  return code->GetInt64();
}

Result<ProgressMessage> ParseProgressMessage(std::string_view line) {
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseObject(line, "progress message"));
  ProgressMessage m;
  m.status = JsonString(doc, "status");
  m.error = JsonString(doc, "error");
  if (m.error.empty()) {
    if (const auto* detail = JsonMember(doc, "errorDetail"))
      m.error = JsonString(*detail, "message");
  }
  m.id = JsonString(doc, "id");
  return m;
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string LabelFilterQuery(const std::vector<std::string>& labels) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  StringArray(w, "label", labels);
  w.EndObject();
  return "filters=" + UrlEncode(Finish(buffer));
}

int CompareApiVersions(std::string_view a, std::string_view b) {
  auto next = [](std::string_view& s) {
    long value = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc()) value = 0;
    size_t used = static_cast<size_t>(ptr - s.data());
    s.remove_prefix(used < s.size() ? used + 1 : s.size());
    return value;
  };
  while (!a.empty() || !b.empty()) {
    long x = next(a), y = next(b);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

Result<std::string> NegotiateApiVersion(std::string_view client_min, std::string_view client_max,
                                        const VersionInfo& engine) {
  std::string engine_min = engine.min_api_version.empty() ? "1.12" : engine.min_api_version;
  std::string chosen(CompareApiVersions(client_max, engine.api_version) < 0 ? client_max
                                                                            : engine.api_version);
  if (CompareApiVersions(chosen, client_min) < 0) {
    return Error(ErrorCode::kDockerApi, "Docker engine API " + engine.api_version +
                                            " is too old: sandrun needs API " +
                                            std::string(client_min) + " or newer (Docker 20.10+)");
  }
  if (CompareApiVersions(chosen, engine_min) < 0) {
    return Error(ErrorCode::kDockerApi, "Docker engine requires API " + engine_min +
                                            " or newer; sandrun speaks up to " +
                                            std::string(client_max));
  }
  return chosen;
}

}  // namespace sandrun::docker
