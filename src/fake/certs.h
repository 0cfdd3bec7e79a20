#pragma once
// A self-signed certificate and key (P-256), written as PEM files, for the fake provider's HTTPS
// when the demo runs: the client trusts it with --cacert, so verification stays on.
#include <string>
#include <vector>

#include "core/result.h"

namespace infdoctor::fake {

struct CertFiles {
  std::string cert;  // PEM certificate, also the CA file to trust
  std::string key;   // PEM private key
};

// Valid from an hour ago for `valid_hours`; a negative `valid_hours` makes a certificate that
// expired that many hours ago (the fault matrix's expired certificate).
core::Result<CertFiles> write_self_signed(const std::string& dir, const std::vector<std::string>& dns_names,
                                          const std::vector<std::string>& ips, long valid_hours = 7 * 24);

}  // namespace infdoctor::fake
