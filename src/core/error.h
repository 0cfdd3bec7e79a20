#pragma once
// Failure kinds shared by every module. Each code is one row of kErrorTable: a stable token that
// lands in results.json and in rules, and a sentence for people.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace infdoctor::core {

enum class ErrorCode {
  Ok,
  InvalidArgument,
  ResolveFailed,
  ConnectFailed,
  TlsFailed,
  Timeout,
  HttpStatus,
  ConnectionClosed,
  ConnectionReset,
  MalformedStream,
  StreamError,
  TruncatedStream,
  ResponseTooLarge,
  DnsNxdomain,
  DnsServfail,
  DnsRefused,
  DnsTimeout,
  DnsNoData,
  DnsFailed,
  ConnectRefused,
  NoRoute,
  NotPermitted,
  ConfigError,
  BudgetExhausted,
  DeadlineExceeded,
  Interrupted,
  Unreachable,
  Io,
  Internal,
};

struct ErrorInfo {
  ErrorCode code;
  std::string_view token;
  std::string_view text;
};

inline constexpr std::array kErrorTable{
    ErrorInfo{ErrorCode::Ok, "ok", "no error"},
    ErrorInfo{ErrorCode::InvalidArgument, "invalid_argument", "invalid argument"},
    ErrorInfo{ErrorCode::ResolveFailed, "resolve_failed", "could not resolve host"},
    ErrorInfo{ErrorCode::ConnectFailed, "connect_failed", "could not connect"},
    ErrorInfo{ErrorCode::TlsFailed, "tls_failed", "TLS handshake or verification failed"},
    ErrorInfo{ErrorCode::Timeout, "timeout", "timed out"},
    ErrorInfo{ErrorCode::HttpStatus, "http_status", "server answered with an error status"},
    ErrorInfo{ErrorCode::ConnectionClosed, "connection_closed", "connection closed early"},
    ErrorInfo{ErrorCode::ConnectionReset, "connection_reset", "connection reset by the peer"},
    ErrorInfo{ErrorCode::MalformedStream, "malformed_stream", "malformed response stream"},
    ErrorInfo{ErrorCode::StreamError, "stream_error", "error event in the response stream"},
    ErrorInfo{ErrorCode::TruncatedStream, "truncated_stream", "the stream ended without its terminator"},
    ErrorInfo{ErrorCode::ResponseTooLarge, "response_too_large", "response exceeded a size cap"},
    ErrorInfo{ErrorCode::DnsNxdomain, "dns_nxdomain", "the name does not exist (NXDOMAIN)"},
    ErrorInfo{ErrorCode::DnsServfail, "dns_servfail", "the resolver failed (SERVFAIL)"},
    ErrorInfo{ErrorCode::DnsRefused, "dns_refused", "the resolver refused the query (REFUSED)"},
    ErrorInfo{ErrorCode::DnsTimeout, "dns_timeout", "DNS lookup timed out"},
    ErrorInfo{ErrorCode::DnsNoData, "dns_nodata", "the name has no record of that type"},
    ErrorInfo{ErrorCode::DnsFailed, "dns_failed", "DNS lookup failed"},
    ErrorInfo{ErrorCode::ConnectRefused, "connect_refused", "connection refused"},
    ErrorInfo{ErrorCode::NoRoute, "no_route", "no route to host"},
    ErrorInfo{ErrorCode::NotPermitted, "not_permitted", "operation not permitted"},
    ErrorInfo{ErrorCode::ConfigError, "config_error", "invalid configuration"},
    ErrorInfo{ErrorCode::BudgetExhausted, "budget_exhausted", "the request budget (--max-requests) is spent"},
    ErrorInfo{ErrorCode::DeadlineExceeded, "deadline", "the check's deadline came first"},
    ErrorInfo{ErrorCode::Interrupted, "interrupted", "interrupted (SIGINT or SIGTERM)"},
    ErrorInfo{ErrorCode::Unreachable, "model_unreachable", "the model could not be reached (key, URL or model)"},
    ErrorInfo{ErrorCode::Io, "io", "input/output error"},
    ErrorInfo{ErrorCode::Internal, "internal_error", "internal error"},
};
static_assert(kErrorTable.size() == static_cast<std::size_t>(ErrorCode::Internal) + 1,
              "every ErrorCode needs exactly one row, in enum order");

constexpr const ErrorInfo& error_info(ErrorCode c) { return kErrorTable[static_cast<std::size_t>(c)]; }
// The code of a stable token ("timeout"); Internal for an unknown one.
constexpr ErrorCode code_from_token(std::string_view token) {
  for (const auto& e : kErrorTable)
    if (e.token == token) return e.code;
  return ErrorCode::Internal;
}

struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message;  // one line, for people; never contains a secret
  std::string detail;   // optional: library text, position, phase

  std::string_view token() const { return error_info(code).token; }
};

}  // namespace infdoctor::core
