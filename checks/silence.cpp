#include "checks/silence.h"

#include <algorithm>
#include <cmath>

namespace infdoctor::checks {

std::chrono::milliseconds retransmission_timeout(const std::vector<double>& rtts_ms, std::chrono::milliseconds ceiling) {
  if (rtts_ms.empty()) return ceiling;
  // RFC 6298 (2.2) and (2.3): the first sample sets SRTT = R and RTTVAR = R/2; each later one
  // moves RTTVAR by 1/4 towards |SRTT - R| and SRTT by 1/8 towards R.
  double srtt = rtts_ms.front(), rttvar = rtts_ms.front() / 2;
  for (std::size_t i = 1; i < rtts_ms.size(); ++i) {
    rttvar = 0.75 * rttvar + 0.25 * std::abs(srtt - rtts_ms[i]);
    srtt = 0.875 * srtt + 0.125 * rtts_ms[i];
  }
  constexpr double kFloorMs = 1000;  // RFC 6298 (2.4)
  const double rto = std::max(kFloorMs, srtt + 4 * rttvar);
  return std::min(ceiling, std::chrono::milliseconds(static_cast<long long>(std::ceil(rto))));
}

}  // namespace infdoctor::checks
