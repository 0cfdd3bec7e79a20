// How a thousand targets' slots spread over their interval, held without waiting for it.
#include <doctest/doctest.h>

#include <array>
#include <string>

#include "serve/schedule.h"

namespace infdoctor::serve {
namespace {

using namespace std::chrono_literals;

TEST_CASE("serve: a thousand targets' slots spread over their interval, each one interval after the last") {
  const auto interval = 60s;
  const Schedule::Clock::time_point t{std::chrono::hours(1000)};
  std::array<int, 10> tenths{};
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "t" + std::to_string(i);
    const auto slot = slot_at_or_after(t, name, interval);
    CAPTURE(name);
    REQUIRE(slot >= t);
    REQUIRE(slot < t + interval);
    CHECK(slot_at_or_after(slot, name, interval) == slot);
    CHECK(slot_at_or_after(slot + 1ns, name, interval) == slot + interval);
    CHECK(slot_at_or_after(t, name, interval) == slot);  // the same name, the same slot
    ++tenths[static_cast<std::size_t>((slot - t) * 10 / interval)];
  }
  // Even would be 100 a tenth; a herd at the top of the interval would fill the first.
  for (std::size_t i = 0; i < tenths.size(); ++i) {
    CAPTURE(i);
    CHECK(tenths[i] > 70);
    CHECK(tenths[i] < 130);
  }
}

}  // namespace
}  // namespace infdoctor::serve
