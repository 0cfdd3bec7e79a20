#pragma once
// Test support: a child program with its own environment, stdout and stderr in files, signals
// sent by its PID, and a bounded wait that reports how it ended and its peak RSS.
// Peak RSS is the child's own VmHWM, read from /proc every 5 ms while it runs: wait4's ru_maxrss
// would count the parent's memory too, which the child shares until it calls exec.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace infdoctor::test {

struct ChildExit {
  bool timed_out = false;  // killed at the deadline
  int exit_code = -1;      // -1 when ended by a signal
  int signal = 0;
  long max_rss_kb = 0;     // VmHWM, sampled until exit
  double wall_s = 0;
};

class Child {
 public:
  // `env` entries ("NAME=value") are added to this process's environment, replacing same names.
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& out_path,
        const std::string& err_path) {
    std::vector<std::string> envs = env;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      const std::string name = kv.substr(0, kv.find('='));
      bool replaced = false;
      for (const auto& x : env) replaced = replaced || x.compare(0, name.size() + 1, name + "=") == 0;
      if (!replaced) envs.push_back(kv);
    }
    std::vector<char*> av, ev;
    for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    for (const auto& e : envs) ev.push_back(const_cast<char*>(e.c_str()));
    ev.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    started_ = std::chrono::steady_clock::now();
    if (posix_spawn(&pid_, av[0], &fa, nullptr, av.data(), ev.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool ok() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  void send(int sig) const {
    if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
  }
  // Waits up to `timeout` (then SIGKILL) and reaps the child.
  ChildExit wait(std::chrono::milliseconds timeout) {
    ChildExit out;
    if (pid_ <= 0 || reaped_) return out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int st = 0;
    for (;;) {
      out.max_rss_kb = std::max(out.max_rss_kb, vm_hwm_kb());
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        out.timed_out = true;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    reaped_ = true;
    out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (WIFEXITED(st)) out.exit_code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) out.signal = WTERMSIG(st);
    return out;
  }

 private:
  long vm_hwm_kb() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
    return 0;
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace infdoctor::test
