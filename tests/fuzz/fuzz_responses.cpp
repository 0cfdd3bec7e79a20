// libFuzzer target: what infdoctor reads from a provider's response bodies. The same bytes go to
// the streamed-response decoder (split into chunks chosen by the first byte, whose top bit picks
// the OpenAI or the Anthropic flavour), the non-streamed response parser and the error-body
// parser, and as a header value to the Server-Timing reader. None may crash; the decoder's counts
// must agree with themselves, and every server timing read is a finite duration.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <cmath>

#include "api/openai.h"
#include "api/sample.h"
#include "core/clock.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t step = 1 + data[0] % 64;
  const auto flavour = (data[0] & 0x80) ? infdoctor::api::Flavour::Anthropic : infdoctor::api::Flavour::OpenAI;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);

  infdoctor::api::ChatStream stream(flavour);
  const auto now = infdoctor::core::SteadyClock::now();
  for (std::size_t i = 0; i < body.size(); i += step)
    if (!stream.on_body(body.substr(i, step), now)) break;
  stream.finish();
  if (stream.content_event_times().size() > stream.event_count()) std::abort();
  if (stream.text().size() > infdoctor::api::ChatStream::kMaxKeptText) std::abort();
  if (stream.text().size() > stream.text_bytes()) std::abort();

  (void)infdoctor::api::parse_chat_response(body, flavour);
  (void)infdoctor::api::parse_error_body(body);
  for (const auto& [name, ms] : infdoctor::api::parse_server_timing(body))
    if (name.empty() || !std::isfinite(ms) || ms < 0) std::abort();
  return 0;
}
