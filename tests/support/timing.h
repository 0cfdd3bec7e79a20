#pragma once
// What the tests may hold a build to, timing and memory. Under AddressSanitizer the fake
// provider's threads start and run several times slower, so the tolerances against planted
// delays widen by kTimingSlack. And its heap keeps freed blocks in quarantine (up to 256 MB) with
// shadow memory beside the heap, so a process's RSS there says nothing of a leak: tests report it
// and do not bound it (kRssBounded); LeakSanitizer at each process's exit is the leak check.
namespace infdoctor::test {

#ifdef INFDOCTOR_SANITIZED
inline constexpr double kTimingSlack = 3.0;
inline constexpr bool kRssBounded = false;
#else
inline constexpr double kTimingSlack = 1.0;
inline constexpr bool kRssBounded = true;
#endif

}  // namespace infdoctor::test
