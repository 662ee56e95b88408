#pragma once
// Timestamps for the hot path. steady_clock costs ~18 ns per read under kvm-clock; the invariant
// TSC costs ~8 ns, which is what keeps a begin/end pair within 1.5x of the two-clock floor. TSC
// ticks are converted to steady_clock nanoseconds by the writer thread, never by the caller.
#include <atomic>
#include <chrono>
#include <cstdint>

#include "candle_graph/profile.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace candle_graph::detail {

inline std::uint64_t steady_now_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// True when the CPU declares (CPUID 0x80000007 EDX[8]) a TSC that ticks at a constant rate through
// frequency changes and idle states (Linux's `constant_tsc` and `nonstop_tsc` flags come from the
// same bit). Without it, TSC deltas are not time and we fall back to steady_clock.
bool tsc_is_invariant() noexcept;

class Timer {
 public:
  // Resolves `automatic` and calibrates; `origin` is the session start on both scales.
  explicit Timer(TimerKind requested) noexcept;

  bool uses_tsc() const noexcept { return tsc_; }
  std::uint64_t now() const noexcept {
#if defined(__x86_64__)
    if (tsc_) return __rdtsc();
#endif
    return steady_now_ns();
  }

  // Nanoseconds since session start for a raw reading, with the one TSC scale measured at open
  // (docs/runtime-4.md: error bound).
  std::uint64_t since_origin_ns(std::uint64_t raw) const noexcept;
  std::uint64_t duration_ns(std::uint64_t start_raw, std::uint64_t end_raw) const noexcept;
  // The second calibration, at finish: one more (TSC, steady_clock) pair, and how far the
  // opening calibration's conversion of that TSC reading is from steady_clock's own reading, in
  // ns (0 with steady_clock). Every duration D of the session is then within about
  // D / session length × this (+ the opening pair's gap) of what steady_clock would give.
  std::uint64_t error_at_finish_ns() const noexcept;

 private:
  bool tsc_ = false;
  std::uint64_t origin_raw_ = 0;
  std::uint64_t origin_steady_ = 0;
  // ns per tick; read by callers converting durations for the string API.
  std::atomic<double> ns_per_tick_{1.0};
};

inline std::uint64_t Timer::since_origin_ns(std::uint64_t raw) const noexcept {
  if (raw <= origin_raw_) return 0;
  if (!tsc_) return raw - origin_raw_;
  return static_cast<std::uint64_t>(static_cast<double>(raw - origin_raw_) *
                                    ns_per_tick_.load(std::memory_order_relaxed));
}

inline std::uint64_t Timer::duration_ns(std::uint64_t start_raw,
                                        std::uint64_t end_raw) const noexcept {
  // Unsynchronized cores could make end < start after a migration; a duration is never negative.
  if (end_raw <= start_raw) return 0;
  if (!tsc_) return end_raw - start_raw;
  return static_cast<std::uint64_t>(static_cast<double>(end_raw - start_raw) *
                                    ns_per_tick_.load(std::memory_order_relaxed));
}

}  // namespace candle_graph::detail
