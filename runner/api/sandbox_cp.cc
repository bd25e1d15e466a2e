#include "runner/api/sandbox_cp.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "runner/api/exec_inputs.h"
#include "runner/patch/rooted_fs.h"
#include "runner/patch/tree_copy.h"
#include "runner/policy/exec_decision.h"
#include "sandbox/executors/docker/host_mounts.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::api {
namespace {

constexpr char kSandboxPrefix[] = "sandbox:";
constexpr size_t kSandboxPrefixLen = sizeof kSandboxPrefix - 1;

bool IsSandboxArg(const std::string& arg) { return arg.rfind(kSandboxPrefix, 0) == 0; }

// The last component of a path ("a/b/" -> "b"); "" for "/", ".", "..".
std::string BaseName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::string base = path.substr(path.rfind('/') + 1);
  return base == "." || base == ".." ? "" : base;
}

std::string DirName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The workspace-relative path of `sandbox:PATH` ("" = the workspace itself), or a refusal.
Result<std::string> SandboxRel(const std::string& arg, const std::string& workdir) {
  std::string path = arg.substr(kSandboxPrefixLen);
  if (!path.empty() && path[0] == '/') {
    if (path == workdir) {
      path.clear();
    } else if (workdir != "/" && path.rfind(workdir + "/", 0) == 0) {
      path = path.substr(workdir.size() + 1);
    } else {
      return Error::Refusal("path-not-allowed",
                            arg + ": only the sandbox workspace (" + workdir +
                                ") can be copied; the container's other paths are its read-only "
                                "image or tmpfs");
    }
  }
  std::vector<std::string> parts;
  for (const std::string& part : patch::SplitRel(path)) {
    if (part == ".") continue;
    if (part == "..") {
      return Error::Refusal("path-not-allowed",
                            arg + ": `..` is not allowed (paths stay in the sandbox workspace)");
    }
    parts.push_back(part);
  }
  return patch::JoinRel(parts, 0, parts.size());
}

// The sandbox of the scope an exec of this agent and session would use: the exec path's own
// loader and decision (as `policy check`), so cp cannot disagree with exec about where it is.
Result<exec::SandboxSpec> ScopeSandbox(const GlobalOptions& global) {
  policy::Caller caller;
  caller.provider = "cli";
  caller.uid = ::geteuid();
  caller.agent_id = global.agent;
  caller.session_key = global.session.empty() ? "main" : global.session;
  policy::ExecRequest request;
  request.command = "true";  // any command: only the plan's sandbox is used
  std::unique_ptr<LoadedCall> call = LoadExecInputs(global, caller, request, Purpose::kCheck);
  for (const std::string& w : call->diagnostics) PrintWarning(w);
  if (call->failure) return *call->failure;
  policy::ExecDecision d = policy::DecideExec(request, call->inputs);
  if (!d.gated) {
    if (d.refusal) return *d.refusal;
    return Error(ErrorCode::kInternal, "no plan for the sandbox: " + d.reason);
  }
  if (d.gated->plan.target != exec::Target::kSandbox) {
    return Error::Refusal("sandbox-unavailable",
                          "agent " + caller.agent_id + ", session " + caller.session_key +
                              " runs on the host, not in a sandbox (sandbox.mode, "
                              "tools.exec.host): there is no sandbox workspace to copy to or "
                              "from; use cp");
  }
  return std::move(d.gated->plan.sandbox);
}

// The scope's workspace, opened as the root every sandbox path is resolved beneath, checked to be
// the directory the gate checked (the scratch dir: the one made or found now).
Result<patch::RootedFs> OpenWorkspace(const exec::SandboxSpec& spec) {
  PathIdentity expected = spec.workspace_id;
  if (spec.scratch) {
    // As apply_patch: the scratch dir exists once a container used it; a copy may come first,
    // or after a prune detached its image. Made as the sandbox makes it.
    SANDRUN_ASSIGN_OR_RETURN(UniqueFd made,
                             exec::EnsureScratch(spec, exec::DetectMountSupport(true)));
    struct stat st {};
    if (::fstat(made.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat the scratch");
    expected = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  }
  SANDRUN_ASSIGN_OR_RETURN(patch::RootedFs fs,
                           patch::RootedFs::Open(spec.workspace_host_dir, /*confined=*/true));
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd root, fs.Open("", O_PATH | O_DIRECTORY));
  struct stat st {};
  if (::fstat(root.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat the workspace");
  if (expected.known() && (expected.dev != static_cast<uint64_t>(st.st_dev) ||
                           expected.ino != static_cast<uint64_t>(st.st_ino))) {
    return Error::Refusal("sandbox-unavailable",
                          "the sandbox workspace " + spec.workspace_host_dir +
                              " is no longer the directory that was checked");
  }
  return fs;
}

// What the caller sees for a workspace-relative path: the container path.
std::string Shown(const exec::SandboxSpec& spec, const std::string& rel) {
  return std::string(kSandboxPrefix) + (rel.empty() ? spec.workdir : spec.workdir + "/" + rel);
}

// A resolution error of a sandbox path as a refusal: leading out is path-not-allowed.
Error Refuse(const Error& e, const std::string& arg) {
  if (e.code == ErrorCode::kRefused) return e;
  return Error::Refusal(e.sys_errno == EXDEV ? "path-not-allowed" : "invalid-request",
                        arg + ": " + e.message);
}

int Finish(const Status& copied, const patch::TreeCopy& copy, const std::string& shown) {
  for (const std::string& w : copy.warnings()) PrintWarning(w);
  if (!copied) {
    PrintError(copied.error().ToString());
    return copied.error().code == ErrorCode::kInvalidArgument ? kExitRefused : kExitFailure;
  }
  std::printf("copied %zu file%s to %s\n", copy.files(), copy.files() == 1 ? "" : "s",
              shown.c_str());
  return kExitOk;
}

int Refused(const Error& e) {
  PrintError(e.ToString());
  return e.code == ErrorCode::kRefused || e.code == ErrorCode::kInvalidArgument ||
                 e.code == ErrorCode::kNotFound
             ? kExitRefused
             : kExitFailure;
}

// Host SRC -> sandbox:DEST.
int CopyIn(const std::string& src, const std::string& dest, const exec::SandboxSpec& spec,
           const patch::RootedFs& fs) {
  if (spec.workspace_read_only) {
    return Refused(Error::Refusal("read-only-workspace",
                                  "sandbox cp cannot write: the sandbox workspace is read-only "
                                  "(sandbox.workspaceAccess is \"ro\")."));
  }
  auto rel = SandboxRel(dest, spec.workdir);
  if (!rel) return Refused(rel.error());
  // The caller's own path: opened as cp opens it (a link given here is followed).
  UniqueFd in(::open(src.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!in.valid())
    return Refused(Error::Refusal("not-found", Error::FromErrno(errno, src).ToString()));
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
    return Refused(
        Error::Refusal("invalid-request", src + " is neither a regular file nor a directory"));
  }
  std::string name = BaseName(src);
  if (name.empty()) {
    char real[PATH_MAX];
    if (::realpath(src.c_str(), real) != nullptr) name = BaseName(real);
  }
  if (name.empty()) return Refused(Error::Refusal("invalid-request", src + " has no name to copy"));

  std::string dir_rel;
  if (!rel->empty()) {
    auto info = fs.Resolve(*rel, /*follow_final=*/true);
    if (!info) return Refused(Refuse(info.error(), dest));
    if (info->type == patch::FileType::kDirectory) {
      dir_rel = info->rel;
    } else if (info->type == patch::FileType::kSymlink || info->type == patch::FileType::kOther) {
      return Refused(Error::Refusal("invalid-request",
                                    dest + " is a dangling symbolic link or a special file"));
    } else {
      std::vector<std::string> parts = patch::SplitRel(info->rel);
      name = parts.back();
      dir_rel = patch::JoinRel(parts, 0, parts.size() - 1);
    }
  }
  auto dir = fs.OpenDir(dir_rel, /*create=*/true, nullptr);
  if (!dir) return Refused(Refuse(dir.error(), dest));
  patch::TreeCopy copy({.own_like_parent = ::geteuid() == 0});
  const std::string target = Shown(spec, dir_rel.empty() ? name : dir_rel + "/" + name);
  return Finish(copy.Copy(in.get(), dir->get(), name, target), copy, target);
}

// sandbox:SRC -> host DEST.
int CopyOut(const std::string& src, const std::string& dest, const exec::SandboxSpec& spec,
            const patch::RootedFs& fs) {
  auto rel = SandboxRel(src, spec.workdir);
  if (!rel) return Refused(rel.error());
  // Beneath the root: a link is followed only while it stays in the workspace.
  auto in = fs.Open(*rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (!in) {
    if (in.error().code == ErrorCode::kNotFound) {
      return Refused(Error::Refusal("not-found", src + ": no such file or directory"));
    }
    return Refused(Refuse(in.error(), src));
  }
  std::string name = BaseName(rel->empty() ? spec.workdir : *rel);
  if (name.empty()) name = "workspace";
  std::string parent = dest;
  struct stat st {};
  if (::stat(dest.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (dest.back() == '/') {
      return Refused(Error::Refusal("not-found", dest + ": no such directory"));
    }
    parent = DirName(dest);
    name = BaseName(dest);
    if (name.empty()) return Refused(Error::Refusal("invalid-request", dest + ": not a name"));
  }
  UniqueFd dir(::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) {
    return Refused(Error::Refusal("not-found", Error::FromErrno(errno, parent).ToString()));
  }
  patch::TreeCopy copy({.own_like_parent = false});
  const std::string target = parent == "/" ? "/" + name : parent + "/" + name;
  return Finish(copy.Copy(in->get(), dir.get(), name, target), copy, target);
}

}  // namespace

int RunSandboxCp(const GlobalOptions& global, const std::string& src, const std::string& dest) {
  const bool into = IsSandboxArg(dest);
  if (src.empty() || dest.empty() || IsSandboxArg(src) == into) {
    PrintError(
        "sandbox cp copies between the host and the sandbox workspace: exactly one of SRC and "
        "DEST must be sandbox:PATH (e.g. sandrun sandbox cp report.txt sandbox:out/ or "
        "sandrun sandbox cp sandbox:out/report.txt .)");
    return kExitRefused;
  }
  auto spec = ScopeSandbox(global);
  if (!spec) return Refused(spec.error());
  auto fs = OpenWorkspace(*spec);
  if (!fs) return Refused(fs.error());
  return into ? CopyIn(src, dest, *spec, *fs) : CopyOut(src, dest, *spec, *fs);
}

}  // namespace sandrun::api
