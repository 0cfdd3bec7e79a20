#pragma once
// Timing tolerances of the tests. Under AddressSanitizer the fake provider's threads start and
// run several times slower, so the tolerances against planted delays widen by kTimingSlack.
namespace infdoctor::test {

#ifdef INFDOCTOR_SANITIZED
inline constexpr double kTimingSlack = 3.0;
#else
inline constexpr double kTimingSlack = 1.0;
#endif

}  // namespace infdoctor::test
