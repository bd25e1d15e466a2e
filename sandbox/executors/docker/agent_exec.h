// Sandbox commands run through the container's agent (agent_link.h): the fast path of the
// Docker executor. The same plan, the same `sh -lc` + SANDRUN_PREPEND_PATH semantics and the
// same outcome as the Engine API exec, without the engine on the way: the agent starts the
// command, streams its output with sequence numbers, enforces its timeout and reports how it
// ended (exit code or signal, exactly).
//
// Pattern of use (DockerExecutor):
//   auto outcome = RunOnAgent(dir, plan, collector, cancel);      // foreground
//   auto process = StartOnAgent(dir, plan, std::move(sink), done); // background session
//   auto adopted = AdoptOnAgent(key, std::move(sink));             // after a restart
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/executors/docker/agent_link.h"
#include "sandbox/executors/output.h"
#include "sandbox/executors/plan.h"
#include "sandbox/executors/process.h"

namespace sandrun::exec {

// The START of `plan`: `/bin/sh -lc -- PREFIX+command` as the sandbox user, its env (with
// SANDRUN_PREPEND_PATH and TERM as the Engine API exec gets them), cwd, PTY and timeout.
Result<AgentStart> AgentStartFor(const Plan& plan, bool stdin_open, bool kill_on_disconnect);

// Runs `plan` in the foreground through the agent in `dir`; output goes to `collector`. The
// outcome's status, exit code and signal are set (kAborted when cancelled: the tree is sent
// TERM, then KILL after the plan's grace). An Error with `started` false: nothing ran (no agent
// answering; the caller may fall back to the Engine API); with `started` true the command may
// have run and the error is the outcome.
Result<ExecOutcome> RunOnAgent(const std::string& dir, const Plan& plan, OutputCollector& collector,
                               const CancelToken* cancel, bool* started);

// Called once from the process's thread when the command ended, to complete the outcome (the
// output fields, warnings, the container's health) before Wait() returns it.
using AgentFinish = std::function<void(ExecOutcome&, OutputCollector&)>;

// Starts `plan` in the background (stdin open, a PTY when plan.pty). The process can be
// Release()d: the command keeps running in the agent, which keeps its output for AdoptOnAgent.
Result<std::unique_ptr<RunningProcess>> StartOnAgent(const std::string& dir, const Plan& plan,
                                                     LiveSink sink, AgentFinish finish);

// "sandrun-agent-v1|<agent dir>|<command id>|<pty: 0|1>", the adoption key of an agent command.
bool IsAgentAdoptionKey(const std::string& key);
// Re-attaches to the command `key` names: output from where the last runner acknowledged
// (nothing printed meanwhile is lost), kill, and the agent's own timeout. kNotFound when the
// agent or the command is gone.
Result<std::unique_ptr<RunningProcess>> AdoptOnAgent(const std::string& key, LiveSink sink);

}  // namespace sandrun::exec
