#include "runner/api/doctor.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>

#include "runner/config/state_dir.h"
#include "sandbox/docker/client.h"
#include "sandbox/docker/image_build.h"
#include "sandbox/harden/seccomp_support.h"

namespace sandrun::api {
namespace {

using Level = DoctorCheck::Level;

constexpr const char* kImages[] = {"minimal", "bookworm"};
constexpr auto kEngineTimeout = std::chrono::seconds(4);  // the whole doctor stays under 5 s

DoctorCheck Check(std::string name, Level level, std::string detail, std::string fix = "") {
  return DoctorCheck{std::move(name), level, std::move(detail), std::move(fix)};
}

DoctorCheck StateDirCheck() {
  auto path = config::StateDirPath();
  if (!path) {
    return Check("state-dir", Level::kFail, path.error().ToString(),
                 "set SANDRUN_HOME to an absolute directory");
  }
  if (auto ok = config::EnsureStateDir(*path); !ok) {
    return Check("state-dir", Level::kFail, ok.error().ToString(),
                 "fix the directory's owner and mode (chmod 700), or point SANDRUN_HOME elsewhere");
  }
  return Check("state-dir", Level::kOk, *path + " (0700)");
}

void EngineChecks(std::vector<DoctorCheck>& checks) {
  auto client = docker::Client::FromEnvironment({std::chrono::milliseconds(3000)});
  if (!client) {
    checks.push_back(Check("engine", Level::kFail, client.error().ToString(),
                           "set DOCKER_HOST to unix:///path or tcp://host:port"));
    return;
  }
  CallOptions opts{Deadline::After(kEngineTimeout), nullptr};
  std::string where = (*client)->endpoint().ToString();
  auto version = (*client)->Version(opts);
  if (!version) {
    checks.push_back(Check("engine", Level::kFail, version.error().ToString(),
                           "start dockerd (bash scripts/setup does), or point DOCKER_HOST at a "
                           "running engine"));
    for (const char* image : kImages) {
      checks.push_back(Check("image", Level::kFail,
                             std::string(docker::kImageRepository) + ":" + image +
                                 " not checked: the engine is unreachable",
                             "start the engine first"));
    }
    return;
  }
  checks.push_back(Check(
      "engine", Level::kOk,
      where + ": Docker " + version->version + " (" + version->os + "/" + version->arch + ")"));

  auto api = (*client)->ApiVersion(opts);
  if (!api) {
    checks.push_back(Check("api-version", Level::kFail, api.error().ToString(),
                           "use Docker 20.10 (API 1.41) or newer"));
    return;
  }
  checks.push_back(Check("api-version", Level::kOk,
                         "engine API " + version->api_version + " (min " +
                             (version->min_api_version.empty() ? "?" : version->min_api_version) +
                             "), using " + *api));

  std::string images_dir = docker::DefaultImagesDir();
  for (const char* image : kImages) {
    std::string ref = std::string(docker::kImageRepository) + ":" + image;
    std::string build = "sandrun image build " + std::string(image);
    auto info = (*client)->InspectImage(ref, opts);
    if (!info) {
      bool missing = info.error().code == ErrorCode::kNotFound;
      checks.push_back(Check("image", Level::kFail,
                             ref + (missing ? " is missing" : ": " + info.error().ToString()),
                             build + " (or bash scripts/setup)"));
      continue;
    }
    std::string detail = ref + " " + info->id.substr(0, 19);
    auto label = info->labels.find(docker::kRecipeHashLabel);
    auto hash = docker::RecipeHash(images_dir, image);
    if (hash && (label == info->labels.end() || label->second != *hash)) {
      checks.push_back(
          Check("image", Level::kWarn, detail + ": older than its recipe in " + images_dir, build));
      continue;
    }
    checks.push_back(Check("image", Level::kOk, detail));
  }
}

DoctorCheck SeccompCheck() {
  auto support = harden::ProbeSeccomp();
  if (!support) {
    return Check("seccomp", Level::kFail, support.error().ToString(),
                 "use a kernel with CONFIG_SECCOMP_FILTER; host commands need it");
  }
  return Check("seccomp", Level::kOk,
               "filter mode available; libseccomp " + support->library_version + " (API level " +
                   std::to_string(support->api_level) + ")");
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kOk:
      return "ok";
    case Level::kWarn:
      return "warn";
    case Level::kFail:
      return "FAIL";
  }
  return "?";
}

}  // namespace

bool DoctorReport::ok() const {
  for (const auto& c : checks) {
    if (c.level == Level::kFail) return false;
  }
  return true;
}

DoctorReport RunDoctor() {
  DoctorReport report;
  report.checks.push_back(StateDirCheck());
  EngineChecks(report.checks);
  report.checks.push_back(SeccompCheck());
  return report;
}

std::string FormatDoctorText(const DoctorReport& report) {
  std::string out;
  size_t failed = 0;
  std::string failed_names;
  for (const auto& c : report.checks) {
    std::string level = LevelName(c.level);
    std::string name = c.name;
    level.resize(6, ' ');
    name.resize(13, ' ');
    out += "  " + level + name + c.detail + "\n";
    if (!c.fix.empty() && c.level != Level::kOk)
      out += "        " + std::string(13, ' ') + "fix: " + c.fix + "\n";
    if (c.level == Level::kFail) {
      ++failed;
      if (failed_names.find(c.name) == std::string::npos) {
        failed_names += (failed_names.empty() ? "" : ", ") + c.name;
      }
    }
  }
  if (failed == 0) {
    out += "all required checks passed\n";
  } else {
    out += std::to_string(failed) + " check" + (failed == 1 ? "" : "s") +
           " failed: " + failed_names + "\n";
  }
  return out;
}

std::string FormatDoctorJson(const DoctorReport& report) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("ok");
  w.Bool(report.ok());
  w.Key("checks");
  w.StartArray();
  for (const auto& c : report.checks) {
    w.StartObject();
    w.Key("name");
    w.String(c.name.c_str());
    w.Key("status");
    w.String(c.level == Level::kOk ? "ok" : c.level == Level::kWarn ? "warn" : "fail");
    w.Key("detail");
    w.String(c.detail.c_str());
    if (!c.fix.empty() && c.level != Level::kOk) {
      w.Key("fix");
      w.String(c.fix.c_str());
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace sandrun::api
