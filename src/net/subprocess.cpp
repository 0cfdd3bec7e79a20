#include "net/subprocess.h"

#include <signal.h>
#include <sys/wait.h>

#include <thread>

#include <boost/asio.hpp>
#include <boost/process.hpp>

namespace infdoctor::net {
namespace {

namespace bp = boost::process;
namespace asio = boost::asio;
using core::ErrorCode;

core::Result<boost::filesystem::path> find_exe(const std::string& name) {
  if (name.find('/') != std::string::npos) return boost::filesystem::path(name);
  auto p = bp::search_path(name);
  if (p.empty()) return core::make_error(ErrorCode::InvalidArgument, "program not found in PATH: " + name);
  return p;
}

// Reads a pipe to EOF into `sink`, keeping at most `cap` bytes.
void read_all(bp::async_pipe& pipe, std::string& sink, std::array<char, 4096>& buf, std::size_t cap) {
  pipe.async_read_some(asio::buffer(buf), [&pipe, &sink, &buf, cap](const boost::system::error_code& ec, std::size_t n) {
    if (n > 0 && sink.size() < cap) sink.append(buf.data(), std::min(n, cap - sink.size()));
    if (!ec) read_all(pipe, sink, buf, cap);
  });
}

}  // namespace

core::Result<CommandResult> run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                        std::size_t max_output_bytes) {
  if (argv.empty()) return core::make_error(ErrorCode::InvalidArgument, "empty command");
  auto exe = find_exe(argv[0]);
  if (!exe.ok()) return exe.error();
  CommandResult r;
  try {
    asio::io_context io;
    bp::async_pipe out(io), err(io);
    std::vector<std::string> args(argv.begin() + 1, argv.end());
    bp::child c(exe.value(), bp::args(args), bp::std_out > out, bp::std_err > err, bp::std_in.close());
    std::array<char, 4096> b1{}, b2{};
    read_all(out, r.out, b1, max_output_bytes);
    read_all(err, r.err, b2, max_output_bytes);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    io.run_for(timeout);  // returns when both pipes hit EOF, or at the deadline
    // A child may close its output and live on: the deadline holds for its exit too.
    std::error_code ec;
    while (io.stopped() && c.running(ec) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!io.stopped() || c.running(ec)) {
      r.timed_out = true;
      c.terminate(ec);
    }
    c.wait(ec);
    r.exit_code = c.exit_code();
  } catch (const std::exception& e) {
    return core::make_error(ErrorCode::Io, "cannot run " + argv[0], e.what());
  }
  return r;
}

struct Process::Impl {
  asio::io_context io;
  bp::async_pipe out{io};
  bp::child child;
  asio::streambuf buf;
};

Process::Process(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Process::~Process() { stop(); }

core::Result<std::unique_ptr<Process>> Process::start(const std::vector<std::string>& argv) {
  if (argv.empty()) return core::make_error(ErrorCode::InvalidArgument, "empty command");
  auto exe = find_exe(argv[0]);
  if (!exe.ok()) return exe.error();
  auto impl = std::make_unique<Impl>();
  try {
    std::vector<std::string> args(argv.begin() + 1, argv.end());
    impl->child = bp::child(exe.value(), bp::args(args), bp::std_out > impl->out, bp::std_in.close());
  } catch (const std::exception& e) {
    return core::make_error(ErrorCode::Io, "cannot start " + argv[0], e.what());
  }
  return std::unique_ptr<Process>(new Process(std::move(impl)));
}

core::Result<std::string> Process::read_line(std::chrono::milliseconds timeout) {
  boost::system::error_code result = asio::error::would_block;
  asio::async_read_until(impl_->out, impl_->buf, '\n',
                         [&result](const boost::system::error_code& ec, std::size_t) { result = ec; });
  impl_->io.restart();
  impl_->io.run_for(timeout);
  if (result == asio::error::would_block) {
    impl_->out.cancel();
    impl_->io.restart();
    impl_->io.run_for(std::chrono::milliseconds(100));  // let the cancelled handler run
    return core::make_error(ErrorCode::Timeout, "no line from the child process within the deadline");
  }
  if (result && result != asio::error::eof)
    return core::make_error(ErrorCode::Io, "reading the child's output failed", result.message());
  std::istream is(&impl_->buf);
  std::string line;
  if (!std::getline(is, line)) return core::make_error(ErrorCode::ConnectionClosed, "child closed its output");
  return line;
}

int Process::pid() const { return impl_->child.id(); }

bool Process::running() {
  std::error_code ec;
  return impl_->child.valid() && impl_->child.running(ec);
}

int Process::stop(std::chrono::milliseconds grace) {
  bp::child& c = impl_->child;
  if (!c.valid()) return -1;
  std::error_code ec;
  if (c.running(ec)) {
    ::kill(c.id(), SIGTERM);
    const auto until = std::chrono::steady_clock::now() + grace;
    while (c.running(ec) && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (c.running(ec)) c.terminate(ec);
  }
  c.wait(ec);
  const int code = c.exit_code();
  c.detach();
  impl_->child = bp::child();
  return code;
}

}  // namespace infdoctor::net
