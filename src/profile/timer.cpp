#include "profile/timer.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <thread>

namespace candle_graph::detail {

bool tsc_is_invariant() noexcept {
#if defined(__x86_64__)
  // CPUID leaf 0x80000007, EDX bit 8: "invariant TSC" (constant rate through P-, C- and T-state
  // changes); Linux derives its `constant_tsc` and `nonstop_tsc` flags from the same bit.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000007u) return false;
  if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

namespace {

// One (tsc, steady) pair read as close together as possible: the pair with the smallest gap out
// of a few tries, stamped at its midpoint.
struct ClockPair {
  std::uint64_t tsc;
  std::uint64_t steady;
};

ClockPair read_pair() noexcept {
  ClockPair best{0, 0};
#if defined(__x86_64__)
  std::uint64_t best_gap = ~std::uint64_t{0};
  for (int i = 0; i < 5; ++i) {
    std::uint64_t a = __rdtsc();
    std::uint64_t s = steady_now_ns();
    std::uint64_t b = __rdtsc();
    if (b - a < best_gap) {
      best_gap = b - a;
      best = {a + (b - a) / 2, s};
    }
  }
#endif
  return best;
}

}  // namespace

Timer::Timer(TimerKind requested) noexcept {
#if defined(__x86_64__)
  tsc_ = requested == TimerKind::tsc || (requested == TimerKind::automatic && tsc_is_invariant());
#else
  (void)requested;
#endif
  if (!tsc_) {
    origin_steady_ = origin_raw_ = steady_now_ns();
    return;
  }
  ClockPair first = read_pair();
  // A short first calibration so that records converted before the writer's first refinement
  // are already within ~0.1% (the refinement then brings that down as the session runs).
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ClockPair second = read_pair();
  origin_raw_ = first.tsc;
  origin_steady_ = first.steady;
  if (second.tsc > first.tsc && second.steady > first.steady)
    ns_per_tick_.store(static_cast<double>(second.steady - first.steady) /
                           static_cast<double>(second.tsc - first.tsc),
                       std::memory_order_relaxed);
}

std::uint64_t Timer::error_at_finish_ns() const noexcept {
  if (!tsc_) return 0;
  const ClockPair now = read_pair();
  if (now.steady < origin_steady_) return 0;
  const std::uint64_t predicted = since_origin_ns(now.tsc);
  const std::uint64_t actual = now.steady - origin_steady_;
  return predicted > actual ? predicted - actual : actual - predicted;
}

}  // namespace candle_graph::detail
