#include "fake/demo_env.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fake/certs.h"
#include "fake/dns_server.h"
#include "fake/forward_proxy.h"
#include "fake/lab.h"
#include "fake/server.h"
#include "net/subprocess.h"

namespace infdoctor::fake {
namespace {

core::Error failed(const std::string& what) { return core::make_error(core::ErrorCode::Internal, what); }

// The fake provider as its own process on loopback; scenario, certificate and key in a private
// temporary directory, removed at the end.
class LoopbackDemo final : public DemoEnvironment {
 public:
  ~LoopbackDemo() override {
    if (process_) process_->stop();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  int run_client(const std::function<int()>& client) override { return client(); }

  core::Status start(const DemoFault& fault, const std::string& program) {
    char tmpl[] = "/tmp/infdoctor-demo-XXXXXX";
    if (!::mkdtemp(tmpl)) return failed("cannot create a temporary directory");
    dir_ = tmpl;
    const std::string scenario = dir_ + "/scenario.json";
    std::ofstream(scenario) << fault.scenario;
    std::vector<std::string> argv = {program, "--listen", "127.0.0.1:0", "--scenario", scenario};
    if (fault.tls) {
      auto certs = write_self_signed(dir_, {"localhost", "api.demo.test"}, {"127.0.0.1"});
      if (!certs.ok()) return certs.error();
      argv.insert(argv.end(), {"--tls-cert", certs->cert, "--tls-key", certs->key});
      cacert_ = certs->cert;
    }
    auto proc = net::Process::start(argv);
    if (!proc.ok()) return failed("cannot start infdoctor-fake next to infdoctor: " + proc.error().message);
    process_ = std::move(proc.value());
    auto line = process_->read_line(std::chrono::seconds(10));
    if (!line.ok() || line->rfind("listening on ", 0) != 0) return failed("the fake provider did not start");
    const std::string port = line->substr(line->rfind(':') + 1);
    // With a DNS fault the API host is a name that only the demo's own resolver knows.
    std::string host = "127.0.0.1";
    if (fault.dns_delay_ms >= 0) {
      try {
        dns_ = std::make_unique<DnsResponder>(
            "127.0.0.1", 0,
            std::map<std::string, DnsName>{{"api.demo.test", DnsName{DnsMode::Answer, {"127.0.0.1"}, {}, 60}}},
            fault.dns_delay_ms);
      } catch (const std::exception& e) {
        return failed(e.what());
      }
      host = "api.demo.test";
      resolver_ = dns_->address();
    }
    base_url_ = std::string(fault.tls ? "https://" : "http://") + host + ":" + port + "/v1";
    if (fault.via_proxy) {
      auto p = ForwardProxy::start({{{"api.demo.test", "127.0.0.1"}}, "", "127.0.0.1", fault.proxy_tunnel_delay_ms});
      if (!p.ok()) return p.error();
      proxy_ = std::move(p.value());
      proxy_url_ = proxy_->url();
    }
    return {};
  }

 private:
  std::string dir_;
  std::unique_ptr<net::Process> process_;
  std::unique_ptr<DnsResponder> dns_;
  std::unique_ptr<ForwardProxy> proxy_;
};

// A real round trip needs a real path: the fake provider behind the lab's delaying wire, the
// client in the lab's client namespace.
class LabDemo final : public DemoEnvironment {
 public:
  explicit LabDemo(const DemoFault& fault)
      : lab_({fault.lab_delay_ms, fault.lab_loss_ratio, fault.lab_direct_closed, fault.lab_drop_payload_to_server}) {}
  ~LabDemo() override {
    proxy_.reset();
    if (server_) server_->stop();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  int run_client(const std::function<int()>& client) override {
    int code = 3;
    in_netns(lab_.client_ns(), [&] { code = client(); });
    return code;
  }

  core::Status start(const DemoFault& fault) {
    if (!lab_.ok()) return failed("cannot build the lab: " + lab_.error());
    auto scenario = parse_scenario(fault.scenario, "demo scenario " + fault.name);
    if (!scenario.ok()) return scenario.error();
    ServerOptions so;
    so.host = Lab::kServerIp;
    so.port = 8080;
    if (fault.tls) {
      // HTTPS by the server's address: a certificate for it, which the client is given to trust.
      char tmpl[] = "/tmp/infdoctor-lab-XXXXXX";
      if (!::mkdtemp(tmpl)) return failed("cannot create a temporary directory");
      dir_ = tmpl;
      auto certs = write_self_signed(dir_, {"api.lab.test"}, {Lab::kServerIp});
      if (!certs.ok()) return certs.error();
      so.tls_cert = certs->cert;
      so.tls_key = certs->key;
      cacert_ = certs->cert;
    }
    try {
      in_netns(lab_.server_ns(), [&] {
        auto s = Server::start(std::move(scenario.value()), so);
        if (s.ok()) server_ = std::move(s.value());
      });
    } catch (const std::exception& e) {
      return failed(e.what());
    }
    if (!server_) return failed("the fake provider did not start in the lab");
    base_url_ = std::string(fault.tls ? "https://" : "http://") + Lab::kServerIp + ":8080/v1";
    if (fault.via_proxy) {
      // The proxy runs on the router, which reaches the server whatever the client's own routes.
      auto p = ForwardProxy::start({{}, lab_.router_ns(), Lab::kRouterIp, fault.proxy_tunnel_delay_ms});
      if (!p.ok()) return p.error();
      proxy_ = std::move(p.value());
      proxy_url_ = proxy_->url();
    }
    return {};
  }

 private:
  Lab lab_;
  std::string dir_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<ForwardProxy> proxy_;
};

}  // namespace

namespace {
std::string beside_this_program(const std::string& name) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return name;
  buf[n] = '\0';
  return (std::filesystem::path(buf).parent_path() / name).string();
}
}  // namespace

core::Result<std::unique_ptr<DemoEnvironment>> DemoEnvironment::start(const DemoFault& fault,
                                                                       const std::string& fake_program_given) {
  const std::string fake_program = fake_program_given.empty() ? beside_this_program("infdoctor-fake") : fake_program_given;
  if (fault.lab_delay_ms >= 0) {
    if (auto why = Lab::unavailable_reason())
      return failed("the demo plants " + fault.name + " on a lab of network namespaces: " + *why);
    auto lab = std::make_unique<LabDemo>(fault);
    if (auto st = lab->start(fault); !st.ok()) return st.error();
    return std::unique_ptr<DemoEnvironment>(std::move(lab));
  }
  auto local = std::make_unique<LoopbackDemo>();
  if (auto st = local->start(fault, fake_program); !st.ok()) return st.error();
  return std::unique_ptr<DemoEnvironment>(std::move(local));
}

}  // namespace infdoctor::fake
