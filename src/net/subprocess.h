#pragma once
// Child processes with deadlines (Boost.Process v1 on Asio). Boost 1.74's child::wait_for is
// unreliable, so every wait is an io_context::run_for on the child's pipes, then terminate().
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace infdoctor::net {

struct CommandResult {
  int exit_code = -1;
  bool timed_out = false;  // killed at the deadline; output holds what came before
  std::string out;
  std::string err;
};

// Runs argv[0] (a path, or a name looked up in PATH) with stdin closed, collecting stdout and
// stderr (each capped at `max_output_bytes`), killing it at `timeout`.
core::Result<CommandResult> run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                        std::size_t max_output_bytes = 16u << 20);

// A long-running child (a server) whose first stdout line is read with a deadline. Ended by
// stop() or the destructor: SIGTERM, then SIGKILL if it has not gone within a grace period.
class Process {
 public:
  static core::Result<std::unique_ptr<Process>> start(const std::vector<std::string>& argv);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  core::Result<std::string> read_line(std::chrono::milliseconds timeout);
  int pid() const;
  bool running();
  // Sends SIGTERM and waits up to `grace` for the exit; SIGKILL after that. Returns the exit code.
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));

 private:
  struct Impl;
  explicit Process(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace infdoctor::net
