#pragma once
// Duration statistics with bounded memory: samples, total, min and max are exact; p50/p95 come
// from a log-bucket histogram.
//
// Sketch: values below 128 ns have a bucket each (exact). Above, a bucket holds the values that
// share the top 7 significant bits (exponent + 6 mantissa bits), i.e. a width of 2^(e−6) for
// values in [2^e, 2^(e+1)); a quantile is reported as its bucket's midpoint, clamped to
// [min, max], so its relative error is at most 2^-7 ≈ 0.8 % (≤ 1 %). Buckets are stored densely
// between the lowest and highest seen (a few dozen for one operation), at most 3,776 in all.
// The first 32 samples are also kept verbatim, so small series have exact quantiles.
// Quantiles use the nearest-rank definition: the smallest value with at least ⌈q·n⌉ samples ≤ it.
#include <cstdint>
#include <vector>

namespace cg::runtime {

class TimingStats {
 public:
  void add(std::uint64_t ns);
  void merge(const TimingStats& other);

  std::uint64_t samples() const { return samples_; }
  std::uint64_t total_ns() const { return total_; }  // saturates at 2^64−1
  std::uint64_t min_ns() const { return samples_ ? min_ : 0; }
  std::uint64_t max_ns() const { return max_; }
  std::uint64_t mean_ns() const { return samples_ ? total_ / samples_ : 0; }
  std::uint64_t quantile_ns(double q) const;
  std::uint64_t p50_ns() const { return quantile_ns(0.5); }
  std::uint64_t p95_ns() const { return quantile_ns(0.95); }

 private:
  static constexpr std::size_t kExact = 32;
  std::uint64_t samples_ = 0;
  std::uint64_t total_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
  std::uint32_t first_bucket_ = 0;
  std::vector<std::uint64_t> buckets_;  // counts for buckets first_bucket_ …
  std::vector<std::uint64_t> exact_;    // the first kExact samples
};

}  // namespace cg::runtime
