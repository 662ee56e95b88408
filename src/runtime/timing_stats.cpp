#include "runtime/timing_stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace cg::runtime {
namespace {

constexpr unsigned kMantissaBits = 6;
constexpr std::uint64_t kLinear = 2u << kMantissaBits;  // 128: one bucket per value below

std::uint32_t bucket_of(std::uint64_t v) {
  if (v < kLinear) return static_cast<std::uint32_t>(v);
  unsigned e = 63u - static_cast<unsigned>(std::countl_zero(v));  // ≥ 7
  std::uint64_t m = (v >> (e - kMantissaBits)) & ((1u << kMantissaBits) - 1);
  return static_cast<std::uint32_t>(kLinear + (e - kMantissaBits - 1) * (1u << kMantissaBits) + m);
}

// Midpoint of a bucket (its only value below kLinear).
std::uint64_t bucket_value(std::uint32_t b) {
  if (b < kLinear) return b;
  std::uint64_t i = b - kLinear;
  unsigned e = static_cast<unsigned>(i >> kMantissaBits) + kMantissaBits + 1;
  std::uint64_t m = i & ((1u << kMantissaBits) - 1);
  std::uint64_t width = std::uint64_t{1} << (e - kMantissaBits);
  std::uint64_t low = (std::uint64_t{1} << e) + m * width;
  return low + width / 2;
}

std::uint64_t rank_of(double q, std::uint64_t n) {
  double r = std::ceil(q * static_cast<double>(n));
  if (r < 1) return 1;
  if (r > static_cast<double>(n)) return n;
  return static_cast<std::uint64_t>(r);
}

}  // namespace

void TimingStats::add(std::uint64_t ns) {
  ++samples_;
  total_ = (total_ > ~std::uint64_t{0} - ns) ? ~std::uint64_t{0} : total_ + ns;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
  if (exact_.size() < kExact && samples_ == exact_.size() + 1) exact_.push_back(ns);
  std::uint32_t b = bucket_of(ns);
  if (buckets_.empty()) {
    first_bucket_ = b;
    buckets_.assign(1, 0);
  } else if (b < first_bucket_) {
    buckets_.insert(buckets_.begin(), first_bucket_ - b, 0);
    first_bucket_ = b;
  } else if (b - first_bucket_ >= buckets_.size()) {
    buckets_.resize(b - first_bucket_ + 1, 0);
  }
  ++buckets_[b - first_bucket_];
}

void TimingStats::merge(const TimingStats& other) {
  if (other.samples_ == 0) return;
  if (samples_ == 0) {
    *this = other;
    return;
  }
  // Exact samples stay exact only while the union is small and complete.
  bool exact = samples_ == exact_.size() && other.samples_ == other.exact_.size() &&
               exact_.size() + other.exact_.size() <= kExact;
  if (exact) {
    exact_.insert(exact_.end(), other.exact_.begin(), other.exact_.end());
  } else {
    exact_.clear();
    exact_.shrink_to_fit();
  }
  samples_ += other.samples_;
  total_ = (total_ > ~std::uint64_t{0} - other.total_) ? ~std::uint64_t{0} : total_ + other.total_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  std::uint32_t lo = std::min(first_bucket_, other.first_bucket_);
  std::uint32_t hi =
      std::max(first_bucket_ + static_cast<std::uint32_t>(buckets_.size()),
               other.first_bucket_ + static_cast<std::uint32_t>(other.buckets_.size()));
  std::vector<std::uint64_t> merged(hi - lo, 0);
  for (std::size_t i = 0; i < buckets_.size(); ++i)
    merged[first_bucket_ - lo + i] += buckets_[i];
  for (std::size_t i = 0; i < other.buckets_.size(); ++i) {
    merged[other.first_bucket_ - lo + i] += other.buckets_[i];
  }
  buckets_.swap(merged);
  first_bucket_ = lo;
}

std::uint64_t TimingStats::quantile_ns(double q) const {
  if (samples_ == 0) return 0;
  std::uint64_t rank = rank_of(q, samples_);
  if (exact_.size() == samples_) {
    std::vector<std::uint64_t> sorted = exact_;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(rank - 1),
                     sorted.end());
    return sorted[rank - 1];
  }
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      std::uint64_t v = bucket_value(first_bucket_ + static_cast<std::uint32_t>(i));
      return std::clamp(v, min_, max_);
    }
  }
  return max_;
}

}  // namespace cg::runtime
