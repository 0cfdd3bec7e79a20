#pragma once
// An address that never answers is a fact learned in a few probes, not a wait of every probe's
// full timeout: how long a probe waits once other probes of the run were answered, and when an
// address that has never answered is given up. The path and transport checks probe with these.
#include <chrono>
#include <vector>

namespace infdoctor::checks {

// RFC 6298's retransmission timeout over the round trips answered so far (ms): SRTT + 4 RTTVAR by
// its recurrence, no less than its floor of 1 s, no more than `ceiling`. A probe unanswered by
// then is one TCP itself would have sent again. Nothing answered yet: the ceiling.
std::chrono::milliseconds retransmission_timeout(const std::vector<double>& rtts_ms, std::chrono::milliseconds ceiling);

// The probes of one address, answered or not. It is given up after kGiveUpAfter unanswered in a
// row while it has never answered: at 10 % loss three in a row come once in a thousand, so an
// address that answers at all keeps being probed (its loss is measured) and one that is silent
// costs three probes.
class AnswerWatch {
 public:
  static constexpr int kGiveUpAfter = 3;
  void record(bool answered) {
    answered_ = answered_ || answered;
    unanswered_in_row_ = answered ? 0 : unanswered_in_row_ + 1;
    ++probes_;
  }
  bool given_up() const { return !answered_ && unanswered_in_row_ >= kGiveUpAfter; }
  bool answered() const { return answered_; }
  int probes() const { return probes_; }

 private:
  bool answered_ = false;
  int unanswered_in_row_ = 0, probes_ = 0;
};

}  // namespace infdoctor::checks
