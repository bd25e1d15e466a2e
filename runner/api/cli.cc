#include "runner/api/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/api/apply_patch_tool.h"
#include "runner/api/audit_cmd.h"
#include "runner/api/audit_log_cmd.h"
#include "runner/api/cli_context.h"
#include "runner/api/doctor.h"
#include "runner/api/exec_cmd.h"
#include "runner/api/exec_stream.h"
#include "runner/api/image_cmd.h"
#include "runner/api/mcp_cmd.h"
#include "runner/api/policy_cmd.h"
#include "runner/api/sandbox_cmd.h"
#include "runner/api/serve.h"
#include "runner/api/session_cmd.h"
#include "runner/api/token_cmd.h"

namespace sandrun::api {
namespace {

int RunDoctorCommand(const GlobalOptions& global, bool json) {
  DoctorReport report = RunDoctor(global.config_file);
  std::string out = json ? FormatDoctorJson(report) : FormatDoctorText(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return report.ok() ? kExitOk : kExitFailure;
}

void AddExecFlags(CLI::App* exec, ExecFlags& f) {
  exec->add_option("--host", f.host, "auto | sandbox | gateway | node");
  exec->add_option("--security", f.security, "Accepted and ignored: a call cannot change it");
  exec->add_option("--ask", f.ask, "off | on-miss | always (may only tighten)");
  exec->add_flag("--elevated", f.elevated, "Ask for elevated (host) execution");
  exec->add_flag("--wait", f.wait,
                 "When an operator's approval is needed, wait for it (needs sandrun serve), "
                 "then run the approved command and exit with its code");
  exec->add_option("--workdir", f.workdir, "Working directory (container or host path)");
  // One KEY=VALUE per --env, taken as it is (no "[A=1,B=2]" list syntax).
  exec->add_option("--env", f.env, "KEY=VALUE for the command (repeatable)")
      ->allow_extra_args(false);
  exec->add_option("--timeout", f.timeout, "Seconds before the command is killed (0: none)")
      ->check(CLI::NonNegativeNumber);
  exec->add_option("--yield-ms", f.yield_ms, "Background after this long (needs sandrun serve)")
      ->check(CLI::NonNegativeNumber);
  exec->add_flag("--background", f.background, "Return at once (needs sandrun serve)");
  exec->add_flag("--pty", f.pty, "Run with a pseudo-terminal");
  exec->add_flag("--json", f.json, "Print the result object instead of streaming");
  exec->add_option("--image", f.image, "Sandbox image for this call (sandbox.allow.images)");
  exec->add_option("--network", f.network, "Sandbox network mode (sandbox.allow.network)");
  exec->add_option("--memory", f.memory, "Sandbox memory, e.g. 512m (up to sandbox.allow.memory)");
  exec->add_option("--cpus", f.cpus, "Sandbox CPUs (up to sandbox.allow.cpus)")
      ->check(CLI::PositiveNumber);
  exec->add_option("--pids", f.pids, "Sandbox pids limit (up to sandbox.allow.pids)")
      ->check(CLI::PositiveNumber);
  exec->add_flag("--rm", f.rm,
                 "Run in a sandbox of the call's own and remove it (container and scratch "
                 "data) when the call ends");
}

// The words after the first "--": the command of exec and policy check, kept away from CLI11,
// which would read "[a,b]" as a list of two values. `argv` keeps what comes before.
std::optional<std::vector<std::string>> TakeCommandWords(std::vector<const char*>* argv) {
  auto dash = std::find_if(argv->begin() + 1, argv->end(),
                           [](const char* arg) { return std::string_view(arg) == "--"; });
  if (dash == argv->end()) return std::nullopt;
  std::vector<std::string> words(dash + 1, argv->end());
  argv->erase(dash, argv->end());
  return words;
}

// Words given before "--" (or no "--" at all) are refused: only what follows "--" is the command.
bool CommandGiven(const std::optional<std::vector<std::string>>& words,
                  const std::vector<std::string>& stray, const char* usage) {
  if (words && stray.empty()) return true;
  PrintError(std::string("give the command after --: ") + usage +
             (stray.empty() ? "" : " (\"" + stray.front() + "\" is before --)"));
  return false;
}

}  // namespace

void PrintError(const std::string& message) {
  std::fprintf(stderr, "sandrun: %s\n", message.c_str());
}

void PrintWarning(const std::string& message) {
  std::fprintf(stderr, "sandrun: %s\n", message.c_str());
}

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
  app.add_option("--session", global.session, "Session key")->capture_default_str();
  app.add_option("--workspace", global.workspace, "The agent's workspace directory");
  app.add_option("--server", global.server, "Socket of a running `sandrun serve`");

  std::string call_json;
  CLI::App* call = app.add_subcommand("call", "Run one tool call (JSON argument or stdin)");
  call->add_option("JSON", call_json, "The tool call, or - for stdin (default)");

  ExecFlags exec_flags;
  CLI::App* exec = app.add_subcommand(
      "exec", "Run a shell command (sandboxed by default), streaming its output");
  AddExecFlags(exec, exec_flags);
  exec->add_flag("-i,--interactive", exec_flags.interactive,
                 "Forward stdin even when it is a terminal (a pipe or a file always is)");
  exec->add_flag("--exit-code", exec_flags.exit_code,
                 "With --json, exit with the table below instead of 0/1/2");
  exec->footer(
      "Output: stdout and stderr stream separately, byte for byte, with or without `sandrun\n"
      "serve`; the command runs in the current directory (or --workdir). SIGINT/SIGTERM/SIGHUP\n"
      "cancel it (TERM, then KILL after 3 s). It yields (prints the session id, exit 0) only\n"
      "with --yield-ms or --background, through a server.\n"
      "Exit codes (after docker run; --json exits 0 handled / 1 internal / 2 refused unless\n"
      "--exit-code, except for usage errors):\n"
      "  N    the command's own exit code\n"
      "  124  the command timed out (--timeout, tools.exec.timeoutSec) and was killed\n"
      "  128+N  the command was killed by signal N (143: SIGTERM, e.g. cancelled)\n"
      "  125  refused before anything ran: bad input, policy, config, approval denied, and\n"
      "       usage errors (an unknown option, a missing or bad value, no command after --)\n"
      "  123  the sandbox or its engine is unavailable (sandbox-unavailable): nothing ran\n"
      "  122  waiting for an operator's approval (approval-pending): nothing ran yet; the\n"
      "       approval id is on stdout\n"
      "  121  internal error of sandrun (internal), and spawn-failed: the call passed every\n"
      "       check but the host process could not be created, a fault of the runner, not of\n"
      "       the input (123 is kept for the sandbox and its engine)");
  std::vector<std::string> stray_words;  // a command given without "--": refused
  exec->add_option("COMMAND", stray_words, "The shell command, after --");

  ProcessFlags process_flags;
  CLI::App* process = app.add_subcommand(
      "process", "Follow up on background sessions (needs a running sandrun serve)");
  process
      ->add_option("ACTION", process_flags.action,
                   "list | poll | log | write | send-keys | submit | paste | kill | clear | remove")
      ->required();
  process->add_option("--session-id", process_flags.session_id, "The session (adjective-noun id)");
  process->add_option("--timeout", process_flags.timeout_ms, "poll: wait up to this many ms");
  process->add_option("--data", process_flags.data, "write: the bytes to send")
      ->each([&](const std::string&) { process_flags.has_data = true; });
  process->add_flag("--eof", process_flags.eof, "write: close stdin afterwards");
  process->add_option("--keys", process_flags.keys, "send-keys: key names (Enter, C-c, Up, ...)");
  process->add_option("--literal", process_flags.literal, "send-keys: literal text first")
      ->each([&](const std::string&) { process_flags.has_literal = true; });
  process->add_option("--hex", process_flags.hex, "send-keys: raw bytes as hex (1b, 0x03)");
  process->add_option("--text", process_flags.text, "paste: the text")
      ->each([&](const std::string&) { process_flags.has_text = true; });
  process->add_flag("--no-bracketed", process_flags.no_bracketed, "paste: without ESC[200~");
  process->add_option("--offset", process_flags.offset, "log: first line");
  process->add_option("--limit", process_flags.limit, "log: number of lines");

  ServeOptions serve_options;
  CLI::App* serve = app.add_subcommand(
      "serve", "Run the server on $SANDRUN_HOME/sandrun.sock (background sessions, events)");
  serve->add_option("--socket", serve_options.socket,
                    "Unix socket path (default in the state dir)");
  serve->add_flag("--keep-host-processes", serve_options.keep_host_processes,
                  "On shutdown or a crash, leave running host sessions alone (default: kill them)");
  serve->add_option("--listen", serve_options.listen,
                    "Also listen on TCP at HOST:PORT (an IPv4 address, [IPv6] or localhost; port "
                    "0: a free one); a non-loopback address needs --tls-cert and --tls-key");
  serve->add_option("--tls-cert", serve_options.tls_cert,
                    "PEM certificate (chain) for TLS on --listen (TLS 1.2 or later)");
  serve->add_option("--tls-key", serve_options.tls_key, "PEM private key of --tls-cert");
  serve->add_flag("--require-tokens", serve_options.require_tokens,
                  "The unix socket needs a bearer token too (agents share the server's uid)");

  CLI::App* mcp =
      app.add_subcommand("mcp",
                         "Serve MCP (Model Context Protocol) on stdio: exec, process, apply_patch, "
                         "policy_check");
  mcp->footer(
      "One JSON-RPC message per line on stdin/stdout, logs on stderr. Through a running\n"
      "`sandrun serve` when one answers (its sessions and approvals), else in-process (its\n"
      "background sessions end with it). --agent, --session (default main) and --workspace\n"
      "choose the caller. Settings: mcp.maxBlockMs, mcp.maxOutputChars, mcp.waitForApproval.");

  ApplyPatchFlags patch_flags;
  CLI::App* apply_patch = app.add_subcommand(
      "apply-patch", "Apply a *** Begin Patch envelope to the workspace, all or nothing");
  apply_patch->add_option("FILE", patch_flags.file, "The patch file, or - for stdin (default)");
  apply_patch->add_option("--workdir", patch_flags.workdir,
                          "Directory the patch's paths are relative to (in the workspace)");
  apply_patch->add_option("--model", patch_flags.model,
                          "The model id, when tools.exec.applyPatch.allowModels is set");
  apply_patch->add_flag("--json", patch_flags.json, "Print the result object");

  SandboxCommand sandbox_cmd;
  CLI::App* sandbox = app.add_subcommand("sandbox", "Inspect and manage sandbox containers");
  sandbox->require_subcommand(1);
  CLI::App* sandbox_list = sandbox->add_subcommand("list", "This state dir's containers");
  sandbox_list->add_flag("--json", sandbox_cmd.json, "Print JSON");
  CLI::App* sandbox_recreate =
      sandbox->add_subcommand("recreate", "Remove containers; they are recreated on next use");
  sandbox_recreate->add_flag("--all", sandbox_cmd.all, "Every container of this state dir");
  sandbox_recreate->add_option("--scope", sandbox_cmd.scope, "A scope key (agent:ID, shared, ...)");
  sandbox_recreate->add_option("--agent", sandbox_cmd.agent, "The scope agent:ID");
  sandbox_recreate->add_option("--session", sandbox_cmd.session, "A session scope key");
  CLI::App* sandbox_prune =
      sandbox->add_subcommand("prune", "Remove idle (24 h) and old (7 d) containers");
  sandbox_prune->add_flag("--all", sandbox_cmd.all, "Remove every container of this state dir");
  sandbox_prune->add_option("--session", sandbox_cmd.session,
                            "Remove this session's sandbox and its scratch data for good (a "
                            "finished CI job's; needs sandbox.scope \"session\")");

  CLI::App* sandbox_cp = sandbox->add_subcommand(
      "cp", "Copy a file or directory into or out of the sandbox workspace (sandbox:PATH)");
  sandbox_cp->add_option("SRC", sandbox_cmd.src, "A host path, or sandbox:PATH")->required();
  sandbox_cp->add_option("DEST", sandbox_cmd.dest, "A host path, or sandbox:PATH")->required();

  PolicyCheckFlags policy_flags;
  CLI::App* policy = app.add_subcommand("policy", "Evaluate exec policy without running anything");
  policy->require_subcommand(1);
  CLI::App* policy_check = policy->add_subcommand(
      "check", "Print the decision (allow/ask/deny), the analysis and the rewritten command");
  policy_check->add_option("--host", policy_flags.host, "auto | sandbox | gateway | node");
  policy_check->add_option("--cwd", policy_flags.cwd, "The command's working directory");
  policy_check->add_option("--env", policy_flags.env, "KEY=VALUE for the command (repeatable)")
      ->allow_extra_args(false);
  policy_check->add_flag("--elevated", policy_flags.elevated,
                         "As an elevated call (of --session KEY: its /elevated level applies)");
  policy_check->add_option("COMMAND", stray_words, "The command, after --");

  ApprovalsFlags approvals_flags;
  CLI::App* approvals = app.add_subcommand(
      "approvals", "Pending exec approvals and the allowlists ($SANDRUN_HOME/exec-approvals.json)");
  approvals->require_subcommand(1);
  CLI::App* approvals_list = approvals->add_subcommand(
      "list", "Pending approvals and the decision record as a table (--json: and the allowlists)");
  approvals_list->add_flag("--json", approvals_flags.json, "Print JSON");
  CLI::App* approvals_show =
      approvals->add_subcommand("show", "One approval: status, decision, who, when (server)");
  approvals_show->add_option("ID", approvals_flags.id, "The approval id or its 8-char slug")
      ->required();
  CLI::App* approvals_watch = approvals->add_subcommand(
      "watch", "Follow approval events; in a terminal, answer each pending approval");
  approvals_watch->add_flag("--json", approvals_flags.json, "Print each event as JSON");
  CLI::App* approvals_approve =
      approvals->add_subcommand("approve", "Decide a pending approval (needs sandrun serve)");
  approvals_approve->add_option("ID", approvals_flags.id, "The approval id or its 8-char slug")
      ->required();
  approvals_approve
      ->add_option("DECISION", approvals_flags.decision, "allow-once | allow-always | deny")
      ->required();
  CLI::App* allowlist = approvals->add_subcommand("allowlist", "Edit the agent's allowlist");
  allowlist->require_subcommand(1);
  CLI::App* allowlist_add = allowlist->add_subcommand("add", "Add a pattern (path or name glob)");
  allowlist_add->add_option("PATTERN", approvals_flags.pattern, "e.g. /usr/bin/rg, ~/bin/*, git")
      ->required();
  CLI::App* allowlist_remove = allowlist->add_subcommand("remove", "Remove a pattern or entry id");
  allowlist_remove->add_option("PATTERN", approvals_flags.pattern, "The pattern or entry id")
      ->required();
  CLI::App* allowlist_list = allowlist->add_subcommand("list", "Print every allowlist");

  bool audit_json = false;
  CLI::App* audit = app.add_subcommand(
      "audit",
      "Warn about risky policy (safe bins, allowlisted interpreters, file modes, elevated, "
      "sandbox container settings, tenants with host execution)");
  audit->add_flag("--json", audit_json, "Print the findings as JSON");
  AuditLogFlags audit_log_flags;
  CLI::App* audit_log = AddAuditLogCommand(*audit, audit_log_flags);

  TokenFlags token_flags;
  CLI::App* token = AddTokenCommand(app, token_flags);
  SessionFlags session_flags;
  CLI::App* session = AddSessionCommand(app, session_flags);

  bool doctor_json = false;
  CLI::App* doctor = app.add_subcommand(
      "doctor", "Check the state dir, the config, the Docker engine, sandbox images and seccomp");
  doctor->add_flag("--json", doctor_json, "Print the report as JSON");

  ImageFlags image_flags;
  CLI::App* image_build = AddImageCommand(app, image_flags);

  std::vector<const char*> options(argv, argv + argc);
  std::optional<std::vector<std::string>> words = TakeCommandWords(&options);
  auto takes_words = [&] { return exec->parsed() || policy_check->parsed(); };
  // A usage error of `sandrun exec` is "refused before anything ran" in its own table (125,
  // with or without --json: the flags did not parse); every other subcommand keeps 2.
  auto fail = [&](const CLI::ParseError& e) {
    if (app.exit(e) == 0) return kExitOk;  // --help, --version
    return exec->parsed() ? kExecExitRefused : kExitRefused;
  };
  try {
    app.parse(static_cast<int>(options.size()), options.data());
  } catch (const CLI::ParseError& e) {
    if (!words || takes_words()) return fail(e);
  }
  if (words && !takes_words()) {
    // The other subcommands read "--" the CLI11 way (e.g. approvals allowlist add -- -x).
    words.reset();
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return fail(e);
    }
  }

  if (call->parsed()) return RunCallCommand(global, call_json);
  if (exec->parsed()) {
    if (!CommandGiven(words, stray_words, "sandrun exec [flags] -- COMMAND")) {
      return kExecExitRefused;
    }
    exec_flags.command = std::move(*words);
    return RunExecCommand(global, exec_flags);
  }
  if (process->parsed()) return RunProcessCommand(global, process_flags);
  if (token->parsed()) return RunTokenCommand(global, token_flags);
  if (session->parsed()) return RunSessionCommand(global, session_flags);
  if (serve->parsed()) return RunServeCommand(global, serve_options);
  if (mcp->parsed()) return RunMcpCommand(global);
  if (apply_patch->parsed()) return RunApplyPatchCommand(global, patch_flags);
  if (sandbox->parsed()) {
    sandbox_cmd.action = sandbox_list->parsed()       ? "list"
                         : sandbox_recreate->parsed() ? "recreate"
                         : sandbox_cp->parsed()       ? "cp"
                                                      : "prune";
    return RunSandboxCommand(global, sandbox_cmd);
  }
  if (policy_check->parsed()) {
    if (!CommandGiven(words, stray_words, "sandrun policy check [flags] -- COMMAND")) {
      return kExitRefused;
    }
    policy_flags.command = std::move(*words);
    return RunPolicyCheckCommand(global, policy_flags);
  }
  if (approvals->parsed()) {
    approvals_flags.action = approvals_list->parsed()      ? "list"
                             : approvals_show->parsed()    ? "show"
                             : approvals_watch->parsed()   ? "watch"
                             : approvals_approve->parsed() ? "approve"
                             : allowlist_add->parsed()     ? "allowlist-add"
                             : allowlist_remove->parsed()  ? "allowlist-remove"
                                                           : "allowlist-list";
    (void)allowlist_list;
    return RunApprovalsCommand(global, approvals_flags);
  }
  if (audit_log->parsed()) return RunAuditLogCommand(global, audit_log_flags);
  if (audit->parsed()) return RunAuditCommand(global, audit_json);
  if (doctor->parsed()) return RunDoctorCommand(global, doctor_json);
  if (image_build->parsed()) return RunImageBuildCommand(image_flags);
  PrintError("no command given (see sandrun --help)");
  return kExitRefused;
}

}  // namespace sandrun::api
