#pragma once
// The faults `infdoctor demo` can plant in the fake provider: one per cause of the taxonomy where
// the fake alone can produce it, `healthy`, and scenarios where two causes meet. Each says which
// cause (or causes, the larger first) the diagnosis must name.
#include <string>
#include <utility>
#include <vector>

namespace infdoctor::fake {

struct DemoFault {
  std::string name;
  std::vector<std::string> expect;  // causes, ranked; empty: no finding above info
  std::string description;
  std::string scenario;             // the fake provider's scenario JSON
  std::string unavailable;          // why the demo cannot plant it here, when it cannot
  bool tls = false;                 // serve HTTPS (a self-signed certificate the client trusts)
  double dns_delay_ms = -1;         // >= 0: resolve the API host through a demo DNS server this slow
  double lab_delay_ms = -1;         // >= 0: serve across the namespace lab, this one-way delay (root)
  double lab_loss_ratio = 0;        // and drop this share of its packets, each direction
  bool lab_direct_closed = false;   // the lab's client reaches the server only through a proxy
  int lab_drop_payload_to_server = 0;  // the lab's wire drops the n-th segment towards the server
  // A forward proxy (squid) between client and server: the client is given its URL
  // (DemoEnvironment::proxy_url, as $https_proxy); its tunnels' setup held this long.
  bool via_proxy = false;
  double proxy_tunnel_delay_ms = 0;
};

const std::vector<DemoFault>& demo_faults();
const DemoFault* find_demo_fault(const std::string& name);
// What the diagnosis must say: "no finding above info", or the causes ranked ("a, then b").
std::string expected_text(const DemoFault& f);
// Whether a diagnosis (its causes above info, ranked) is what `f` plants: its first cause first and
// every further expected cause somewhere after; nothing above info for a healthy fault.
bool diagnosis_matches(const DemoFault& f, const std::vector<std::string>& causes);
// The causes as expected_text writes them: "a, then b", or "no finding above info".
std::string causes_text(const std::vector<std::string>& causes);
// `infdoctor demo --list-faults`: one aligned row per fault.
std::string demo_fault_table();
inline constexpr const char* kDefaultDemoFault = "realistic";
// The models the demo's provider serves, named as a hosted API names them (no size in the name,
// so the pair is judged by what it measures).
inline constexpr const char* kDemoModel = "gpt-4o";
inline constexpr const char* kDemoSmallModel = "gpt-4o-mini";

}  // namespace infdoctor::fake
