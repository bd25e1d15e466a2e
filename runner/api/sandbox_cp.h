// `sandrun sandbox cp SRC DEST`: copies a file or a directory tree into or out of the sandbox
// workspace of the scope an `exec` of this agent and session would use (tenant "", the local
// CLI), on the host side of its mount; no container is needed or touched.
//
// Exactly one of SRC and DEST is `sandbox:PATH`: PATH relative to the sandbox workspace, or
// absolute at or below the container workdir (sandbox.docker.workdir, /workspace by default).
// Other container paths are refused (path-not-allowed: they are the read-only image or tmpfs),
// as are `..` components, both or neither side a sandbox path, and agents/sessions that run on
// the host (no sandbox). Where the scope's workspace is comes from the exec decision's own plan
// (LoadExecInputs + DecideExec, as `policy check`): its workspace_host_dir, access, scratch and
// identity. The sandbox side is resolved beneath that root (RootedFs: openat2 RESOLVE_BENEATH),
// so `..` and symbolic links out of it are refused, also when the sandbox changes the tree
// meanwhile; below the top everything is walked with O_NOFOLLOW (patch/tree_copy.h).
//
// Into the sandbox: refused (read-only-workspace) for workspaceAccess ro; missing parent
// directories are created; as root, what is created gets the owner of the directory it is made
// in (the workspace owner for an rw workspace, the sandbox user for the scratch dir). DEST an
// existing directory: SRC goes into it under its own name. Out of the sandbox: the host DEST is
// the caller's path (an existing directory to copy into, or the new name; its parent must
// exist), written as the caller. Files are written via a temp file + rename; a file never
// replaces a directory nor a directory a file. Symbolic links and special files inside a
// copied directory are skipped with a warning; a top-level sandbox source that is a link is
// followed only while it stays in the workspace.
//
// Exit codes: 0 copied; 2 refused or bad usage (nothing written); 1 an I/O failure mid-copy
// (what was copied before it stays).
#pragma once

#include <string>

#include "runner/api/cli_context.h"

namespace sandrun::api {

int RunSandboxCp(const GlobalOptions& global, const std::string& src, const std::string& dest);

}  // namespace sandrun::api
