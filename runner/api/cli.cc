#include "runner/api/cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "runner/api/doctor.h"
#include "sandbox/docker/client.h"
#include "sandbox/docker/image_build.h"

namespace sandrun::api {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// Options that come before the subcommand and apply to all of them (SPEC §2.2).
struct GlobalOptions {
  std::string config_file;
  std::string agent = "main";
  std::string session;
  std::string workspace;
  std::string server;
};

void PrintError(const std::string& message) {
  std::fprintf(stderr, "sandrun: %s\n", message.c_str());
}

int RunDoctorCommand(bool json) {
  DoctorReport report = RunDoctor();
  std::string out = json ? FormatDoctorJson(report) : FormatDoctorText(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return report.ok() ? kExitOk : kExitFailure;
}

int RunImageBuild(const std::string& name, bool force, const std::string& images_dir) {
  docker::ImageBuildOptions options;
  options.images_dir = images_dir.empty() ? docker::DefaultImagesDir() : images_dir;
  options.force = force;
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "sandrun: %s\n", line.c_str());
  };
  if (auto valid = docker::ValidateRecipe(options.images_dir, name); !valid) {
    PrintError(valid.error().ToString());
    return kExitUsage;
  }
  auto client = docker::Client::FromEnvironment();
  if (!client) {
    PrintError(client.error().ToString());
    return kExitFailure;
  }
  auto outcome = docker::BuildImage(**client, name, options);
  if (!outcome) {
    PrintError("image build " + name + " failed: " + outcome.error().ToString());
    return kExitFailure;
  }
  std::printf("%s %s\n", outcome->reference.c_str(), outcome->image_id.c_str());
  return kExitOk;
}

}  // namespace

int RunCli(int argc, char** argv) {
  CLI::App app{
      "sandrun: a sandbox-first runner for the shell commands that AI agents issue.\n"
      "Commands run as `sh -lc` inside Docker containers driven through the Engine API.",
      "sandrun"};
  app.set_version_flag("--version", std::string("sandrun ") + SANDRUN_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  GlobalOptions global;
  app.add_option("--config", global.config_file, "Config file (default $SANDRUN_HOME/config.json)");
  app.add_option("--agent", global.agent, "Agent id")->capture_default_str();
  app.add_option("--session", global.session, "Session key");
  app.add_option("--workspace", global.workspace, "The agent's workspace directory");
  app.add_option("--server", global.server, "Socket of a running `sandrun serve`");

  bool doctor_json = false;
  CLI::App* doctor = app.add_subcommand(
      "doctor", "Check the Docker engine, sandbox images, seccomp and the state dir");
  doctor->add_flag("--json", doctor_json, "Print the report as JSON");

  CLI::App* image = app.add_subcommand("image", "Manage the sandbox images");
  image->require_subcommand(1);
  std::string image_name, images_dir;
  bool image_force = false;
  CLI::App* image_build = image->add_subcommand(
      "build", "Build an image from its recipe in images/ and import it (no registry)");
  image_build->add_option("NAME", image_name, "Recipe name: minimal or bookworm")->required();
  image_build->add_flag("--force", image_force, "Rebuild even when the image is up to date");
  image_build->add_option("--images-dir", images_dir,
                          "Directory of recipes (default $SANDRUN_IMAGES_DIR or the source tree)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  if (doctor->parsed()) return RunDoctorCommand(doctor_json);
  if (image_build->parsed()) return RunImageBuild(image_name, image_force, images_dir);
  PrintError("no command given (see sandrun --help)");
  return kExitUsage;
}

}  // namespace sandrun::api
