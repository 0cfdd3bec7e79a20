#pragma once
// The flags every subcommand that talks to an endpoint shares, curl-like where curl has one.
#include <CLI/CLI.hpp>

#include "api/endpoint_spec.h"

namespace infdoctor::cli {

void add_endpoint_flags(CLI::App& cmd, api::EndpointSpec& f);

}  // namespace infdoctor::cli
