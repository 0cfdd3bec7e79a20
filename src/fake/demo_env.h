#pragma once
// A demo fault, planted and serving: the fake provider as a process beside infdoctor (with its
// certificate and, for dns_slow, its own slow resolver), or inside the namespace lab for faults
// that need a real round trip. Everything it started stops with it.
#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "fake/demo_faults.h"

namespace infdoctor::fake {

class DemoEnvironment {
 public:
  // `fake_program` is the infdoctor-fake binary to start for the faults served on loopback; by
  // default the one beside the running program.
  static core::Result<std::unique_ptr<DemoEnvironment>> start(const DemoFault& fault, const std::string& fake_program = "");
  virtual ~DemoEnvironment() = default;

  const std::string& base_url() const { return base_url_; }
  const std::string& cacert() const { return cacert_; }      // empty: plain HTTP
  const std::string& resolver() const { return resolver_; }  // IP:PORT of the demo's resolver; empty: none
  const std::string& proxy_url() const { return proxy_url_; }  // the forward proxy to go through; empty: none
  // Runs the client where it must run: here, or in the lab's client namespace.
  virtual int run_client(const std::function<int()>& client) = 0;

 protected:
  std::string base_url_, cacert_, resolver_, proxy_url_;
};

}  // namespace infdoctor::fake
