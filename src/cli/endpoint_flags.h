#pragma once
// The flags every subcommand that talks to an endpoint shares, curl-like where curl has one.
#include <CLI/CLI.hpp>

#include "api/endpoint_spec.h"

namespace infdoctor::cli {

// Where the endpoint is and how to authenticate (--base-url, --preset, --api-flavour, the key),
// then the transport flags.
void add_endpoint_flags(CLI::App& cmd, api::EndpointSpec& f);
// How to reach it (--cacert, -k, --max-time, --connect-timeout, -H, --proxy, --resolve): compare
// takes these for both its sides, whose addresses come with --a and --b.
void add_transport_flags(CLI::App& cmd, api::EndpointSpec& f);

}  // namespace infdoctor::cli
