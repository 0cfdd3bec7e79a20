#pragma once
// Exit codes (DESIGN.md): 0 healthy, 1 degraded (a warning finding or a violated --slo),
// 2 critical, 3 could not measure what the run came for, 64 the command line is wrong (EX_USAGE,
// sysexits.h).
namespace infdoctor::core {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDegraded = 1;
inline constexpr int kExitCritical = 2;
inline constexpr int kExitCouldNotRun = 3;
inline constexpr int kExitUsage = 64;

}  // namespace infdoctor::core
