#include "checks/silence.h"

#include <doctest/doctest.h>

#include <random>

#include "support/seed.h"

namespace infdoctor::checks {

using std::chrono::milliseconds;

TEST_CASE("silence: the retransmission timeout is RFC 6298's over the round trips answered, floored at 1 s and capped") {
  CHECK(retransmission_timeout({}, milliseconds(2000)) == milliseconds(2000));
  // Short round trips: the floor.
  CHECK(retransmission_timeout({10, 12, 11}, milliseconds(2000)) == milliseconds(1000));
  // One sample R: SRTT = R, RTTVAR = R / 2, so SRTT + 4 RTTVAR = 3 R.
  const double r = std::uniform_real_distribution<double>(400, 600)(test::rng());
  CHECK(retransmission_timeout({r}, milliseconds(5000)).count() == doctest::Approx(3 * r).epsilon(0.002));
  CHECK(retransmission_timeout({r}, milliseconds(1200)) == milliseconds(1200));
  // Steady samples shrink RTTVAR towards the scatter: many equal ones leave about SRTT.
  std::vector<double> steady(200, r);
  CHECK(retransmission_timeout(steady, milliseconds(5000)).count() == doctest::Approx(std::max(1000.0, r)).epsilon(0.01));
}

TEST_CASE("silence: an address is given up after three unanswered in a row only while it never answered") {
  AnswerWatch silent;
  for (int i = 0; i < 2; ++i) silent.record(false);
  CHECK_FALSE(silent.given_up());
  silent.record(false);
  CHECK(silent.given_up());
  CHECK(silent.probes() == 3);
  // An address that answered once is lossy, not silent: its losses are measured, however many.
  AnswerWatch lossy;
  lossy.record(true);
  for (int i = 0; i < 8; ++i) lossy.record(false);
  CHECK_FALSE(lossy.given_up());
  // A lost first probe and then an answer: kept.
  AnswerWatch late;
  late.record(false);
  late.record(false);
  late.record(true);
  late.record(false);
  late.record(false);
  late.record(false);
  CHECK_FALSE(late.given_up());
}

}  // namespace infdoctor::checks
