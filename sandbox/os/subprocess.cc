#include "sandbox/os/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "sandbox/os/proc_table.h"
#include "sandbox/os/pty.h"

namespace sandrun {
namespace {

// The step name of a child that could not get into its run cgroup (clone3 refused it, or its
// write to cgroup.procs failed): Spawn then falls back to the sweep.
constexpr char kCgroupJoinStep[] = "cgroup join";

// What a child that failed before execve writes on the report pipe. Smaller than PIPE_BUF, so
// the write is atomic and the parent reads all of it or nothing.
struct ChildFailure {
  int32_t err = 0;
  char step[60] = {};
};

// Everything the child needs, prepared by the parent before the child starts: the child only
// reads this, calls async-signal-safe functions, and execs or exits.
struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // nullptr: stay
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int report_fd = -1;
  int cgroup_fd = -1;      // the run cgroup's cgroup.procs, written by the child; or -1
  int cgroup_dir_fd = -1;  // the run cgroup itself, for clone3(CLONE_INTO_CGROUP); or -1
  pid_t parent = -1;       // the runner, for the re-check after PR_SET_PDEATHSIG
  bool own_memory = false;
  const ChildStep* steps = nullptr;  // the ordered list (subprocess.h), run before execve
  size_t step_count = 0;
};

[[noreturn]] void ChildFail(int report_fd, const char* step, int err) {
  ChildFailure failure;
  failure.err = err;
  for (size_t i = 0; i + 1 < sizeof(failure.step) && step[i] != '\0'; ++i)
    failure.step[i] = step[i];
  ssize_t ignored = ::write(report_fd, &failure, sizeof(failure));
  (void)ignored;
  ::_exit(127);
}

// The process steps of the list, each reading the plan. Between clone and execve: no
// allocation, no locks, no logging.
const ChildPlan& PlanOf(const void* context) { return *static_cast<const ChildPlan*>(context); }

// First, so that everything the command starts is in the run's cgroup.
int JoinCgroup(const void* context, const char**) {
  const ChildPlan& plan = PlanOf(context);
  if (plan.cgroup_fd >= 0 && ::write(plan.cgroup_fd, "0", 1) != 1) return errno;
  return 0;  // -1: no cgroup, or clone3 started the child inside it
}

int ResetSignals(const void*, const char**) {
  // Default dispositions for every signal: SIG_IGN survives execve (a runner that ignores
  // SIGPIPE would make `yes | head` spin), and a parent's handler must never run in the child.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);  // EINVAL for some
  }
  // The parent blocked everything around the clone; the command starts with nothing blocked (a
  // blocked SIGTERM would survive execve and defeat the kill sequence).
  sigset_t none;
  sigemptyset(&none);
  return ::sigprocmask(SIG_SETMASK, &none, nullptr) == 0 ? 0 : errno;
}

int NewProcessGroup(const void*, const char**) { return ::setpgid(0, 0) == 0 ? 0 : errno; }

// A session leader whose controlling terminal is the PTY (stdin_fd is its slave).
int NewSessionOnTerminal(const void* context, const char** name) {
  if (::setsid() < 0) return errno;
  *name = "TIOCSCTTY";
  return ::ioctl(PlanOf(context).stdin_fd, TIOCSCTTY, 0) == 0 ? 0 : errno;
}

// All source fds are >= 3 (the parent made sure), so dup2 never collides and always clears
// close-on-exec on the target.
int Stdio(const void* context, const char** name) {
  const ChildPlan& plan = PlanOf(context);
  *name = "dup2 stdin";
  if (::dup2(plan.stdin_fd, STDIN_FILENO) < 0) return errno;
  *name = "dup2 stdout";
  if (::dup2(plan.stdout_fd, STDOUT_FILENO) < 0) return errno;
  *name = "dup2 stderr";
  if (::dup2(plan.stderr_fd, STDERR_FILENO) < 0) return errno;
  return 0;
}

// Descriptors the runner opened without O_CLOEXEC must not leak into the command. Marked, not
// closed: the report pipe must stay open until execve succeeds.
int CloseDescriptors(const void*, const char**) {
  if (::close_range(3, UINT_MAX, CLOSE_RANGE_CLOEXEC) != 0 && errno != ENOSYS && errno != EINVAL) {
    return errno;
  }
  return 0;
}

int ChangeDirectory(const void* context, const char**) {
  return ::chdir(PlanOf(context).cwd) == 0 ? 0 : errno;
}

// The child dies with the thread that spawned it. If the runner died before the signal was
// armed, the child was reparented (to init or a subreaper) and nobody will ever kill it: it
// leaves now, before the command runs.
int ArmParentDeath(const void* context, const char**) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return errno;
  if (::getppid() != PlanOf(context).parent) ::_exit(127);
  return 0;
}

[[noreturn]] void ChildMain(const ChildPlan& plan) {
  for (size_t i = 0; i < plan.step_count; ++i) {
    const ChildStep& step = plan.steps[i];
    const char* name = step.name;
    if (int err = step.run(step.context, &name); err != 0) {
      ChildFail(plan.report_fd, name != nullptr ? name : step.name, err);
    }
  }
  ::execve(plan.path, plan.argv, plan.envp);
  ChildFail(plan.report_fd, "execve", errno);
}

// The child's ordered list (subprocess.h), its process steps reading `plan`.
std::vector<ChildStep> ChildStepList(const ChildPlan& plan, const SpawnOptions& options) {
  std::vector<ChildStep> steps;
  steps.reserve(8 + options.child_steps.credentials.size() + options.child_steps.lockdown.size());
  steps.push_back({kCgroupJoinStep, JoinCgroup, &plan});
  steps.push_back({"sigprocmask", ResetSignals, &plan});
  steps.push_back(options.pty ? ChildStep{"setsid", NewSessionOnTerminal, &plan}
                              : ChildStep{"setpgid", NewProcessGroup, &plan});
  steps.push_back({"dup2", Stdio, &plan});
  steps.push_back({"close_range", CloseDescriptors, &plan});
  if (plan.cwd != nullptr) steps.push_back({"chdir", ChangeDirectory, &plan});
  const ChildSteps& caller = options.child_steps;
  steps.insert(steps.end(), caller.credentials.begin(), caller.credentials.end());
  if (options.die_with_parent) steps.push_back({"parent death signal", ArmParentDeath, &plan});
  steps.insert(steps.end(), caller.lockdown.begin(), caller.lockdown.end());
  return steps;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kShareMemoryWithChild = false;  // sanitizer runtimes do not expect CLONE_VM
#else
constexpr bool kShareMemoryWithChild = true;
#endif

int CloneEntry(void* plan) { ChildMain(*static_cast<const ChildPlan*>(plan)); }

// clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP): the child starts inside the run's cgroup.
// Cheaper than the child writing to cgroup.procs: a migration takes the cgroup subsystem's
// fork lock for writing, which waits for an RCU grace period (~1-10 ms here) when migrations
// are rare; a fork into a cgroup takes it for reading. glibc (before 2.39) has no wrapper that
// runs a function on a new stack, so x86-64 gets a few lines of assembly; other architectures,
// kernels without clone3 or CLONE_INTO_CGROUP (before 5.7) and sanitizer builds let the child
// write cgroup.procs instead.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define SANDRUN_CLONE_INTO_CGROUP 1
struct CloneArgs {  // struct clone_args of <linux/sched.h>, version 2 (88 bytes)
  uint64_t flags = 0;
  uint64_t pidfd = 0;
  uint64_t child_tid = 0;
  uint64_t parent_tid = 0;
  uint64_t exit_signal = 0;
  uint64_t stack = 0;
  uint64_t stack_size = 0;
  uint64_t tls = 0;
  uint64_t set_tid = 0;
  uint64_t set_tid_size = 0;
  uint64_t cgroup = 0;
};
constexpr uint64_t kCloneIntoCgroup = 0x200000000ULL;  // CLONE_INTO_CGROUP
// long sandrun_clone3_run(CloneArgs* args, size_t size, int (*fn)(void*), void* arg): the
// parent gets the child's pid or -errno; the child runs fn(arg) on args->stack and exits with
// its result (fn never returns here: it execs or _exits).
extern "C" long sandrun_clone3_run(CloneArgs* args, size_t size, int (*fn)(void*), void* arg);
asm(R"(
  .text
  .globl sandrun_clone3_run
  .hidden sandrun_clone3_run
  .type sandrun_clone3_run, @function
  .p2align 4
sandrun_clone3_run:
  movq %rdx, %r8          # fn and arg survive the system call in r8 and r9
  movq %rcx, %r9
  movl $435, %eax         # __NR_clone3
  syscall
  testq %rax, %rax
  jz 1f
  ret                     # the parent: pid or -errno
1:
  xorl %ebp, %ebp         # the child, on its own stack (16-byte aligned at the top)
  movq %r9, %rdi
  callq *%r8
  movl %eax, %edi
  movl $60, %eax          # __NR_exit
  syscall
  hlt
  .size sandrun_clone3_run, .-sandrun_clone3_run
)");
std::atomic<bool> clone_into_cgroup_works{true};
#endif

// Starts the child and returns once it has called execve or exited. By default as posix_spawn
// does: clone(CLONE_VM | CLONE_VFORK) on a small stack of its own, which skips copying the
// parent's page tables (fork costs ~1.5 ms more per exec on these machines). The child then
// shares our memory until execve: it must write nothing the parent reads, which ChildMain and
// every ChildStep already promise (no allocation; its errno lands in this thread's, unread).
Result<pid_t> StartChild(ChildPlan& plan) {
  if (!kShareMemoryWithChild || plan.own_memory) {
    pid_t pid = ::fork();
    if (pid == 0) ChildMain(plan);
    if (pid < 0) return Error::FromErrno(errno, "fork");
    return pid;
  }
  constexpr size_t kStackBytes = 256 * 1024;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* stack = ::mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return Error::FromErrno(errno, "mmap child stack");
  ::mprotect(stack, page, PROT_NONE);  // guard page: an overflow faults instead of corrupting
  char* top = static_cast<char*>(stack) + kStackBytes;
#ifdef SANDRUN_CLONE_INTO_CGROUP
  if (plan.cgroup_dir_fd >= 0 && clone_into_cgroup_works.load(std::memory_order_relaxed)) {
    const int cgroup_fd = std::exchange(plan.cgroup_fd, -1);  // already inside: no join step
    CloneArgs args;
    args.flags = CLONE_VM | CLONE_VFORK | kCloneIntoCgroup;
    args.exit_signal = SIGCHLD;
    args.stack = reinterpret_cast<uintptr_t>(stack);
    args.stack_size = kStackBytes;
    args.cgroup = static_cast<uint64_t>(plan.cgroup_dir_fd);
    long pid = sandrun_clone3_run(&args, sizeof(args), CloneEntry, &plan);
    plan.cgroup_fd = cgroup_fd;
    if (pid > 0 || (pid != -ENOSYS && pid != -EINVAL && pid != -E2BIG)) {
      ::munmap(stack, kStackBytes);
      if (pid < 0) {
        // Refused because of the cgroup (permissions, its type, it is gone), or out of
        // something that a plain clone would be out of too (EAGAIN, ENOMEM).
        int err = static_cast<int>(-pid);
        bool cgroup = err == EACCES || err == EPERM || err == EBUSY || err == EOPNOTSUPP ||
                      err == ENOENT || err == ENODEV || err == EBADF;
        return Error::FromErrno(err, cgroup ? kCgroupJoinStep : "clone3");
      }
      return static_cast<pid_t>(pid);
    }
    clone_into_cgroup_works.store(false, std::memory_order_relaxed);  // an older kernel
  }
#endif
  pid_t pid = ::clone(CloneEntry, top, CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
  int clone_errno = errno;
  ::munmap(stack, kStackBytes);  // the child has exec'd or exited: its stack is unused
  if (pid < 0) return Error::FromErrno(clone_errno, "clone");
  return pid;
}

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Status SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Error::FromErrno(errno, "fcntl O_NONBLOCK");
  }
  return Ok();
}

// Child ends must not be 0, 1 or 2: dup2(fd, fd) would keep close-on-exec, and dup2 onto a
// descriptor another child end occupies would clobber it.
Status MoveAboveStdio(UniqueFd& fd) {
  if (fd.get() > STDERR_FILENO) return Ok();
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  if (moved < 0) return Error::FromErrno(errno, "fcntl F_DUPFD_CLOEXEC");
  fd.reset(moved);
  return Ok();
}

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

Error ChildError(const ChildFailure& failure, const SpawnOptions& options) {
  std::string step(failure.step, strnlen(failure.step, sizeof(failure.step)));
  std::string what = step;
  if (step == "chdir") what += " " + options.cwd;
  if (step == "execve") what += " " + options.path;
  return Error::FromErrno(failure.err, what);
}

int PollTimeout(const Deadline& deadline) {
  if (deadline.is_never()) return -1;
  return static_cast<int>(std::min<int64_t>(deadline.remaining_ms(), INT_MAX));
}

}  // namespace

void UseCgroupProcsWriteForTesting() {
#ifdef SANDRUN_CLONE_INTO_CGROUP
  clone_into_cgroup_works.store(false);
#endif
}

Result<bool> ProcessGroupAlive(pid_t pgid) {
  if (pgid <= 0) return Error(ErrorCode::kInvalidArgument, "bad process group id");
  if (::kill(-pgid, 0) != 0) {
    if (errno == ESRCH) return false;
    if (errno != EPERM) return Error::FromErrno(errno, "kill -" + std::to_string(pgid));
  }
  SANDRUN_ASSIGN_OR_RETURN(std::vector<ProcStat> table, ReadProcTable());
  return std::any_of(table.begin(), table.end(),
                     [&](const ProcStat& p) { return p.pgrp == pgid && !p.dead(); });
}

Result<bool> WaitForProcessGroupExit(pid_t pgid, const Deadline& deadline) {
  for (;;) {
    SANDRUN_ASSIGN_OR_RETURN(bool alive, ProcessGroupAlive(pgid));
    if (!alive) return true;
    if (deadline.expired()) return false;
    ::usleep(2000);
  }
}

Result<Subprocess> Subprocess::SpawnWithoutCgroup(const SpawnOptions& options, const Error& why) {
  MarkRunCgroupsUnusable("a process could not join its run cgroup: " + why.ToString());
  SpawnOptions sweep = options;
  sweep.tree = TreeTracking::kSweep;
  return Spawn(sweep);
}

Result<Subprocess> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.path.empty() || options.argv.empty()) {
    return Error(ErrorCode::kInvalidArgument, "spawn: empty program path or argv");
  }
  bool nul = HasNul(options.path) || HasNul(options.cwd) ||
             std::any_of(options.argv.begin(), options.argv.end(), HasNul) ||
             std::any_of(options.env.begin(), options.env.end(), HasNul);
  if (nul) return Error(ErrorCode::kInvalidArgument, "spawn: NUL byte in path, argv, env or cwd");

  std::unique_ptr<ProcessTree> tree;
  if (options.tree != TreeTracking::kGroup) {
    // A child that is not to die with us is not to be killed for our death either.
    SANDRUN_ASSIGN_OR_RETURN(tree, ProcessTree::Create(options.tree, !options.die_with_parent));
  }

  // Everything the child touches is built now: no allocation in the child.
  std::vector<char*> argv;
  argv.reserve(options.argv.size() + 1);
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(options.env.size() + 2);
  for (const auto& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  if (tree && !tree->env_entry().empty()) {
    envp.push_back(const_cast<char*>(tree->env_entry().c_str()));
  }
  envp.push_back(nullptr);

  Subprocess proc;
  UniqueFd child_in, child_out, child_err;
  if (options.pty) {
    SANDRUN_ASSIGN_OR_RETURN(Pty pty, OpenPty(options.pty_rows, options.pty_cols));
    proc.pty_master_ = std::move(pty.master);
    child_in = std::move(pty.slave);
    child_out.reset(::fcntl(child_in.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
    child_err.reset(::fcntl(child_in.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
    if (!child_out.valid() || !child_err.valid()) return Error::FromErrno(errno, "dup pty");
  } else {
    if (options.stdin_mode == SpawnOptions::Stdin::kPipe) {
      SANDRUN_ASSIGN_OR_RETURN(Pipe in, MakePipe());
      SANDRUN_RETURN_IF_ERROR(SetNonBlocking(in.write.get()));
      child_in = std::move(in.read);
      proc.stdin_ = std::move(in.write);
    } else {
      child_in.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (!child_in.valid()) return Error::FromErrno(errno, "open /dev/null");
    }
    SANDRUN_ASSIGN_OR_RETURN(Pipe out, MakePipe());
    SANDRUN_ASSIGN_OR_RETURN(Pipe err, MakePipe());
    if (options.pipe_bytes > 0) {
      // Best effort: above /proc/sys/fs/pipe-max-size or the user's pipe quota this fails, and
      // the default capacity is still correct, only slower.
      (void)::fcntl(out.write.get(), F_SETPIPE_SZ, options.pipe_bytes);
      (void)::fcntl(err.write.get(), F_SETPIPE_SZ, options.pipe_bytes);
    }
    SANDRUN_RETURN_IF_ERROR(SetNonBlocking(out.read.get()));
    SANDRUN_RETURN_IF_ERROR(SetNonBlocking(err.read.get()));
    child_out = std::move(out.write);
    child_err = std::move(err.write);
    proc.stdout_ = std::move(out.read);
    proc.stderr_ = std::move(err.read);
  }
  SANDRUN_ASSIGN_OR_RETURN(Pipe report, MakePipe());
  for (UniqueFd* fd : {&child_in, &child_out, &child_err, &report.write}) {
    SANDRUN_RETURN_IF_ERROR(MoveAboveStdio(*fd));
  }

  ChildPlan plan;
  plan.path = options.path.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();
  plan.stdin_fd = child_in.get();
  plan.stdout_fd = child_out.get();
  plan.stderr_fd = child_err.get();
  plan.report_fd = report.write.get();
  plan.cgroup_fd = tree ? tree->cgroup_procs_fd() : -1;
  plan.cgroup_dir_fd = tree ? tree->cgroup_dir_fd() : -1;
  plan.parent = ::getpid();
  plan.own_memory = options.child_steps.own_memory;
  const std::vector<ChildStep> steps = ChildStepList(plan, options);
  plan.steps = steps.data();
  plan.step_count = steps.size();

  // With every signal blocked, no handler of ours runs in the child before it resets them.
  sigset_t all, saved;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  Result<pid_t> started = StartChild(plan);
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (!started) {
    if (tree && tree->uses_cgroup() && started.error().message.rfind(kCgroupJoinStep, 0) == 0) {
      return SpawnWithoutCgroup(options, started.error());
    }
    return std::move(started).error();
  }
  pid_t pid = *started;
  proc.pid_ = pid;

  child_in.reset();
  child_out.reset();
  child_err.reset();
  report.write.reset();

  // EOF: execve succeeded (the pipe was close-on-exec). A full record: a step failed.
  ChildFailure failure;
  size_t got = 0;
  while (got < sizeof(failure)) {
    ssize_t n =
        ::read(report.read.get(), reinterpret_cast<char*>(&failure) + got, sizeof(failure) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got != 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    proc.pid_ = -1;
    if (got != sizeof(failure)) return Error(ErrorCode::kInternal, "short child report");
    Error error = ChildError(failure, options);
    if (tree && tree->uses_cgroup() && error.message.rfind(kCgroupJoinStep, 0) == 0) {
      return SpawnWithoutCgroup(options, error);  // nothing ran: the child failed before execve
    }
    return error;
  }

  proc.pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!proc.pidfd_.valid()) {
    Error error = Error::FromErrno(errno, "pidfd_open");
    if (tree) {
      tree->Attach(pid, options.pty);  // still unreaped: its pid is safe to use
      (void)tree->End(Deadline::After(std::chrono::seconds(2)));
    }
    ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    proc.pid_ = -1;
    return error;
  }
  // Only now: a child that failed before execve was reaped above, and its pid may be anyone's.
  if (tree) tree->Attach(pid, options.pty);
  proc.tree_ = std::move(tree);
  return proc;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      stdin_(std::move(other.stdin_)),
      stdout_(std::move(other.stdout_)),
      stderr_(std::move(other.stderr_)),
      pty_master_(std::move(other.pty_master_)),
      status_(std::exchange(other.status_, std::nullopt)),
      tree_(std::move(other.tree_)) {}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    Destroy();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    stdin_ = std::move(other.stdin_);
    stdout_ = std::move(other.stdout_);
    stderr_ = std::move(other.stderr_);
    pty_master_ = std::move(other.pty_master_);
    status_ = std::exchange(other.status_, std::nullopt);
    tree_ = std::move(other.tree_);
  }
  return *this;
}

Subprocess::~Subprocess() { Destroy(); }

void Subprocess::Destroy() {
  if (pid_ > 0 && !status_) {
    // The leader is not reaped, so its pid (the group id) cannot have been reused.
    if (tree_) {
      (void)tree_->End(Deadline::After(std::chrono::seconds(2)));
    } else {
      (void)KillGroup(SIGKILL);
    }
    (void)Signal(SIGKILL);  // in case it left its group
    (void)Reap();
  }
  tree_.reset();  // ends it: a tree still running after an early Reap is killed now
  pid_ = -1;
  status_.reset();
}

bool Subprocess::HasExited() const {
  if (status_) return true;
  if (!pidfd_.valid()) return false;
  pollfd p{pidfd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

Result<bool> Subprocess::WaitForExit(const Deadline& deadline) const {
  if (status_) return true;
  if (!pidfd_.valid()) return Error(ErrorCode::kInvalidArgument, "no process");
  for (;;) {
    pollfd p{pidfd_.get(), POLLIN, 0};
    int n = ::poll(&p, 1, PollTimeout(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "poll pidfd");
    }
    if (n == 1) return true;
    if (deadline.expired()) return false;
  }
}

Result<ExitStatus> Subprocess::Reap() {
  if (status_) return *status_;
  if (!pidfd_.valid()) return Error(ErrorCode::kInvalidArgument, "no process");
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                  WEXITED) != 0) {
    if (errno != EINTR) return Error::FromErrno(errno, "waitid " + std::to_string(pid_));
  }
  ExitStatus status;
  if (info.si_code == CLD_EXITED) {
    status.exit_code = info.si_status;
  } else {
    status.signal = info.si_status;
    status.core_dumped = info.si_code == CLD_DUMPED;
  }
  status_ = status;
  // The pid is free now: the sweep must not take a process that reuses it for the leader.
  if (tree_) tree_->Attach(-1, false);
  return status;
}

Result<std::optional<ExitStatus>> Subprocess::Wait(const Deadline& deadline) {
  SANDRUN_ASSIGN_OR_RETURN(bool exited, WaitForExit(deadline));
  if (!exited) return std::optional<ExitStatus>();
  SANDRUN_ASSIGN_OR_RETURN(ExitStatus status, Reap());
  return std::optional<ExitStatus>(status);
}

Status Subprocess::Signal(int sig) const {
  if (status_ || !pidfd_.valid()) return Ok();
  if (::syscall(SYS_pidfd_send_signal, pidfd_.get(), sig, nullptr, 0) != 0 && errno != ESRCH) {
    return Error::FromErrno(errno, "pidfd_send_signal " + std::to_string(pid_));
  }
  return Ok();
}

Status Subprocess::KillGroup(int sig) const {
  if (pid_ <= 0) return Ok();
  if (::kill(-pid_, sig) != 0 && errno != ESRCH) {
    return Error::FromErrno(errno, "kill -" + std::to_string(pid_));
  }
  return Ok();
}

Result<bool> Subprocess::GroupAlive() const {
  if (pid_ <= 0) return false;
  return ProcessGroupAlive(pid_);
}

Status Subprocess::KillTree(int sig) const {
  if (tree_) return tree_->Signal(sig);
  return KillGroup(sig);
}

Result<bool> Subprocess::TreeAlive() const {
  if (tree_) return tree_->Alive();
  return GroupAlive();
}

Status Subprocess::EndTree(const Deadline& deadline) {
  if (tree_) return tree_->End(deadline);
  // The group: SIGKILL while the leader is unreaped (afterwards the id may be someone else's).
  // Waiting for it is cheaper after the reap (WaitForProcessGroupExit): an unreaped leader
  // still counts for kill(), so every check would have to scan /proc.
  if (pid_ > 0 && !status_) (void)KillGroup(SIGKILL);
  return Ok();
}

}  // namespace sandrun
