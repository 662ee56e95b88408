#include "compare/compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "runtime/reader.hpp"
#include "runtime/records.hpp"
#include "util/error.hpp"
#include "util/parallel.hpp"

namespace cg::compare {

namespace {

// ---- deterministic random numbers -----------------------------------------------------------
// Our own generator and transforms (not <random>'s distributions, whose algorithms differ between
// standard libraries), so a seed gives the same report everywhere.

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {  // xoshiro256**
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& w : s_)
      w = splitmix64(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in (0, 1]: never 0, so logarithms and powers are safe.
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
  double normal() {  // Marsaglia's polar method
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0, v = 0, s = 0;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double m = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * m;
    has_spare_ = true;
    return u * m;
  }
  double gamma(double a) {  // Marsaglia and Tsang, a >= 1
    const double d = a - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x = 0, v = 0;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
  }
  double beta(double a, double b) {
    const double x = gamma(a);
    return x / (x + gamma(b));
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4] = {};
  double spare_ = 0;
  bool has_spare_ = false;
};

std::uint64_t fnv1a(std::string_view text, std::uint64_t h = 0xcbf29ce484222325ULL) {
  for (char c : text)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

double median_of_sorted(const std::vector<double>& x) {
  const std::size_t n = x.size();
  return n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2.0;
}

// The median of one bootstrap resample of `x` (sorted, n values), drawn from its exact
// distribution instead of by drawing n indices: the k-th smallest of n indices drawn uniformly is
// ceil(n · U(k)), U(k) the k-th order statistic of n uniforms, which is Beta(k, n − k + 1); the
// next one up is the least of the n − k uniforms above U(k). O(1) per resample whatever n.
double resampled_median(const std::vector<double>& x, Rng& rng) {
  const std::size_t n = x.size();
  if (n == 1) return x[0];
  const std::size_t k = (n + 1) / 2;  // 1-based lower middle
  const double nd = static_cast<double>(n);
  const double u = rng.beta(static_cast<double>(k), static_cast<double>(n - k + 1));
  auto index = [&](double q, std::size_t least) {
    double i = std::ceil(q * nd);
    std::size_t j = i < 1.0 ? 1 : (i > nd ? n : static_cast<std::size_t>(i));
    return std::max(j, least);
  };
  const std::size_t i1 = index(u, 1);
  if (n % 2 == 1) return x[i1 - 1];
  const double above = 1.0 - std::pow(rng.uniform(), 1.0 / static_cast<double>(n - k));
  const std::size_t i2 = index(u + (1.0 - u) * above, i1);
  return (x[i1 - 1] + x[i2 - 1]) / 2.0;
}

double ratio_of(double candidate, double base) {
  if (base == 0) return candidate == 0 ? 1.0 : HUGE_VAL;
  return candidate / base;
}

// Linear interpolation between order statistics (type 7) of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  if (frac == 0 || sorted[lo] == sorted[hi]) return sorted[lo];
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

// ---- reading ----------------------------------------------------------------------------------

// The time of one key in one run: a sum per step (records without a step stand alone).
struct Series {
  struct Obs {
    std::uint64_t step = 0;
    bool stepped = false;
    std::uint64_t ns = 0;
  };
  std::vector<Obs> obs;
  std::string op;
  void add(std::optional<std::uint64_t> step, std::uint64_t ns) {
    if (step && !obs.empty() && obs.back().stepped && obs.back().step == *step) {
      obs.back().ns += ns;
      return;
    }
    obs.push_back({step.value_or(0), step.has_value(), ns});
  }
  // Per-step sums: records of one step that were not adjacent (threads interleave) are merged.
  std::vector<double> per_step() {
    std::stable_sort(obs.begin(), obs.end(), [](const Obs& a, const Obs& b) {
      return std::tie(a.stepped, a.step) < std::tie(b.stepped, b.step);
    });
    std::vector<double> out;
    out.reserve(obs.size());
    for (std::size_t i = 0; i < obs.size(); ++i) {
      std::uint64_t ns = obs[i].ns;
      while (obs[i].stepped && i + 1 < obs.size() && obs[i + 1].stepped &&
             obs[i + 1].step == obs[i].step)
        ns += obs[++i].ns;
      out.push_back(static_cast<double>(ns));
    }
    return out;
  }
};

// A statistic of one key in one run: per step its largest finite value (a module called several
// times a step, several layers' gradients … each step is one unit), and the samples that held a
// NaN or Inf.
struct StatSeries {
  struct Obs {
    std::uint64_t step = 0;
    double value = 0;
  };
  std::vector<Obs> obs;
  std::uint64_t non_finite = 0;
  void add(std::uint64_t step, std::optional<double> value, bool non_finite_sample) {
    if (non_finite_sample) ++non_finite;
    if (value) obs.push_back({step, *value});
  }
  std::vector<double> per_step() {
    std::stable_sort(obs.begin(), obs.end(),
                     [](const Obs& a, const Obs& b) { return a.step < b.step; });
    std::vector<double> out;
    for (std::size_t i = 0; i < obs.size(); ++i) {
      double v = obs[i].value;
      while (i + 1 < obs.size() && obs[i + 1].step == obs[i].step)
        v = std::max(v, obs[++i].value);
      out.push_back(v);
    }
    return out;
  }
};

using Key = std::pair<RowKind, std::string>;

struct KeyHash {
  std::size_t operator()(const Key& k) const {
    return std::hash<std::string>{}(k.second) ^ static_cast<std::size_t>(k.first);
  }
};

class CompareSink : public runtime::RecordSink {
 public:
  std::unordered_map<Key, Series, KeyHash> series;
  std::uint64_t untimed = 0;

  void operation(const runtime::OperationRecord& r) override {
    if (!r.static_id || !r.duration_ns) {
      ++untimed;
      return;
    }
    Series& s = at(RowKind::operation, *r.static_id);
    if (s.op.empty()) s.op = std::string(r.op);
    s.add(r.step, *r.duration_ns);
  }
  void module_scope(const runtime::ModuleScopeRecord& r) override {
    at(RowKind::module, r.path).add(r.step, r.duration_ns);
  }
  // A module output's RMS, or a gradient's norm (rms · √finite elements), by path and index.
  std::unordered_map<Key, StatSeries, KeyHash> stat_series;
  void stats(const runtime::StatsRecord& r) override {
    const bool grad = r.of == runtime::StatsOf::grad;
    std::string id(r.path);
    if (r.index != 0) id += "#" + std::to_string(r.index);
    std::optional<double> value;
    if (r.finite)
      value = grad ? r.finite->rms * std::sqrt(static_cast<double>(r.elements - r.non_finite()))
                   : r.finite->rms;
    stat_series[{grad ? RowKind::grad_norm : RowKind::rms, std::move(id)}].add(r.step, value,
                                                                               r.non_finite() > 0);
  }

 private:
  Series& at(RowKind kind, std::string_view id) {
    // Consecutive records of one key are common (a loop's op): skip the hash then.
    if (last_ && last_kind_ == kind && last_id_ == id) return *last_;
    Key key{kind, std::string(id)};
    last_ = &series[key];
    last_kind_ = kind;
    last_id_ = key.second;
    return *last_;
  }
  Series* last_ = nullptr;
  RowKind last_kind_ = RowKind::module;
  std::string last_id_;
};

struct LoadedRun {
  RunInfo info;
  std::unordered_map<Key, Series, KeyHash> series;
  std::unordered_map<Key, StatSeries, KeyHash> stat_series;
};

LoadedRun load(const std::filesystem::path& path, const Options& options) {
  runtime::ReadOptions ro;
  ro.lenient = options.lenient;
  auto sink = std::make_unique<CompareSink>();
  runtime::TraceInfo t = runtime::read_trace(path, *sink, ro);
  if (!t.duplicate_lines.empty()) {
    // Lenient mode found repeated event ids after their records were delivered: read again,
    // skipping them, as the other trace readers do.
    ro.skip_lines.insert(t.duplicate_lines.begin(), t.duplicate_lines.end());
    sink = std::make_unique<CompareSink>();
    t = runtime::read_trace(path, *sink, ro);
  }
  LoadedRun run;
  run.info.path = path.string();
  run.info.schema = std::string(runtime::schema_name(t.meta.schema));
  run.info.entrypoint = t.meta.entrypoint;
  run.info.analysis_id = t.meta.analysis_id;
  run.info.phase = t.meta.phase;
  run.info.operations = t.operations;
  run.info.modules = t.modules;
  run.info.stats = t.stats;
  run.info.untimed_operations = sink->untimed;
  run.info.skipped_lines = t.skipped_lines;
  run.info.truncated = t.truncated;
  run.series = std::move(sink->series);
  run.stat_series = std::move(sink->stat_series);
  return run;
}

std::string shown(const std::optional<std::string>& v) {
  return v ? "\"" + *v + "\"" : "(absent)";
}

// Every trace against the first base trace: the first field that differs is named with its two
// values (refused), or every difference is kept for the report's header (allow_mismatch).
void check_meta(const std::vector<RunInfo>& runs, Report& report) {
  const RunInfo& first = runs.front();
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const RunInfo& other = runs[i];
    const std::pair<const char*, std::pair<std::optional<std::string>, std::optional<std::string>>>
        fields[] = {
            {"schema", {first.schema, other.schema}},
            {"entrypoint", {first.entrypoint, other.entrypoint}},
            {"phase", {first.phase, other.phase}},
            {"analysis_id", {first.analysis_id, other.analysis_id}},
        };
    for (const auto& [name, values] : fields) {
      if (values.first == values.second) continue;
      if (!report.options.allow_mismatch)
        throw InputError(other.path, std::string("meta.") + name + " is " + shown(values.second) +
                                         " but " + first.path + " has " + shown(values.first) +
                                         ": these traces are of different models or analyses "
                                         "(--allow-mismatch compares them anyway)");
      report.mismatches.push_back(
          {name, first.path, shown(values.first), other.path, shown(values.second)});
    }
  }
}

// One side's bootstrap units for a key: the per-step values of its one run, or, with several
// runs, each run's median (runs are the independent units; see docs/compare.md).
struct Side {
  std::vector<double> units;
  SideFigures figures;
  std::string op;
};

std::optional<Side> side_of(const Key& key, std::vector<LoadedRun>& runs) {
  Side side;
  for (auto& run : runs) {
    std::vector<double> steps;
    if (is_stats(key.first)) {
      auto it = run.stat_series.find(key);
      if (it == run.stat_series.end()) continue;
      steps = it->second.per_step();
      side.figures.non_finite_samples += it->second.non_finite;
      if (steps.empty()) {  // every sample non-finite: present, with nothing to compare
        ++side.figures.runs;
        continue;
      }
    } else {
      auto it = run.series.find(key);
      if (it == run.series.end()) continue;
      steps = it->second.per_step();
      if (side.op.empty()) side.op = it->second.op;
    }
    ++side.figures.runs;
    side.figures.observations += steps.size();
    if (runs.size() == 1) {
      side.units = std::move(steps);
    } else {
      std::sort(steps.begin(), steps.end());
      side.units.push_back(median_of_sorted(steps));
    }
  }
  if (side.figures.runs == 0) return std::nullopt;
  std::sort(side.units.begin(), side.units.end());
  side.figures.units = side.units.size();
  if (!side.units.empty()) side.figures.median_ns = median_of_sorted(side.units);
  return side;
}

double sort_weight(const Row& r) {
  if (r.verdict == Verdict::became_non_finite) return HUGE_VAL;
  if (!r.ratio) return 0;
  const double l = std::log(*r.ratio);
  return std::isfinite(l) ? std::fabs(l) : HUGE_VAL;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::slower:
      return "slower";
    case Verdict::faster:
      return "faster";
    case Verdict::no_change:
      return "no_change";
    case Verdict::too_few_samples:
      return "too_few_samples";
    case Verdict::only_in_base:
      return "only_in_base";
    case Verdict::only_in_candidate:
      return "only_in_candidate";
    case Verdict::higher:
      return "higher";
    case Verdict::lower:
      return "lower";
    case Verdict::became_non_finite:
      return "became_non_finite";
  }
  return "no_change";
}

const char* row_kind_name(RowKind k) {
  switch (k) {
    case RowKind::module:
      return "module";
    case RowKind::operation:
      return "operation";
    case RowKind::rms:
      return "rms";
    case RowKind::grad_norm:
      return "grad_norm";
  }
  return "module";
}

void compare_values(const std::vector<double>& base_in, const std::vector<double>& candidate_in,
                    const Options& options, std::uint64_t salt, Row& row) {
  std::vector<double> base = base_in, candidate = candidate_in;
  std::sort(base.begin(), base.end());
  std::sort(candidate.begin(), candidate.end());
  row.ratio = ratio_of(median_of_sorted(candidate), median_of_sorted(base));
  if (base.size() < kMinUnits || candidate.size() < kMinUnits) {
    row.verdict = Verdict::too_few_samples;
    return;
  }
  std::uint64_t seed_state = options.seed ^ salt;
  Rng rng(splitmix64(seed_state));
  std::vector<double> ratios;
  ratios.reserve(options.resamples);
  for (std::uint64_t i = 0; i < options.resamples; ++i) {
    const double b = resampled_median(base, rng);
    const double c = resampled_median(candidate, rng);
    ratios.push_back(ratio_of(c, b));
  }
  std::sort(ratios.begin(), ratios.end());
  const double alpha = 1.0 - options.confidence;
  row.ci_low = quantile(ratios, alpha / 2);
  row.ci_high = quantile(ratios, 1.0 - alpha / 2);
  const bool big_enough = std::fabs(*row.ratio - 1.0) * 100.0 >= options.min_change_pct;
  if (*row.ci_low > 1.0 && big_enough)
    row.verdict = Verdict::slower;
  else if (*row.ci_high < 1.0 && big_enough)
    row.verdict = Verdict::faster;
  else
    row.verdict = Verdict::no_change;
}

Report compare_traces(const std::vector<std::filesystem::path>& base,
                      const std::vector<std::filesystem::path>& candidate, const Options& options) {
  if (base.empty() || candidate.empty())
    throw InputError("", "compare needs at least one base and one candidate trace");
  if (!(options.confidence > 0 && options.confidence < 1))
    throw InputError("", "--confidence must lie strictly between 0 and 1");
  if (options.resamples < 100) throw InputError("", "--resamples must be at least 100");
  Report report;
  report.options = options;
  // Every trace is read on its own thread (one per core at a time, as read_traces does); the
  // first failing trace in the order given is the error reported.
  std::vector<std::filesystem::path> paths = base;
  paths.insert(paths.end(), candidate.begin(), candidate.end());
  std::vector<LoadedRun> loaded(paths.size());
  for_each_index_in_parallel(paths.size(),
                             [&](std::size_t i) { loaded[i] = load(paths[i], options); });
  std::vector<LoadedRun> candidate_runs(
      std::make_move_iterator(loaded.begin() + static_cast<std::ptrdiff_t>(base.size())),
      std::make_move_iterator(loaded.end()));
  loaded.resize(base.size());
  std::vector<LoadedRun> base_runs = std::move(loaded);
  for (const auto& r : base_runs)
    report.base_runs.push_back(r.info);
  for (const auto& r : candidate_runs)
    report.candidate_runs.push_back(r.info);
  std::vector<RunInfo> every = report.base_runs;
  every.insert(every.end(), report.candidate_runs.begin(), report.candidate_runs.end());
  check_meta(every, report);

  std::map<Key, bool> keys;  // sorted: rows come out in one order whatever the hash tables did
  for (const auto& r : base_runs)
    for (const auto& [k, s] : r.series)
      keys.emplace(k, true);
  for (const auto& r : candidate_runs)
    for (const auto& [k, s] : r.series)
      keys.emplace(k, true);
  // Statistics drift only where both sides recorded statistics: one side without any is a run
  // without --stats, not a change in every tensor.
  auto any_stats = [](const std::vector<LoadedRun>& runs) {
    return std::any_of(runs.begin(), runs.end(),
                       [](const LoadedRun& r) { return !r.stat_series.empty(); });
  };
  if (any_stats(base_runs) && any_stats(candidate_runs)) {
    for (const auto* side : {&base_runs, &candidate_runs})
      for (const auto& r : *side)
        for (const auto& [k, s] : r.stat_series)
          keys.emplace(k, true);
  }

  for (const auto& [key, unused] : keys) {
    Row row;
    row.kind = key.first;
    row.id = key.second;
    auto b = side_of(key, base_runs);
    auto c = side_of(key, candidate_runs);
    row.op = b ? b->op : c->op;
    if (b) row.base = b->figures;
    if (c) row.candidate = c->figures;
    if (b && c && is_stats(key.first) && (b->units.empty() || c->units.empty())) {
      // A side whose every sample was non-finite has no figure to compare.
      row.verdict = c->figures.non_finite_samples > 0 && b->figures.non_finite_samples == 0
                        ? Verdict::became_non_finite
                        : Verdict::too_few_samples;
    } else if (b && c) {
      // The row's random stream depends on its kind and id only, so adding a row elsewhere
      // changes no other row's interval.
      const std::uint64_t salt = fnv1a(key.second, fnv1a(row_kind_name(key.first)));
      compare_values(b->units, c->units, options, salt, row);
      if (is_stats(key.first)) {
        if (row.verdict == Verdict::slower) row.verdict = Verdict::higher;
        if (row.verdict == Verdict::faster) row.verdict = Verdict::lower;
        if (c->figures.non_finite_samples > 0 && b->figures.non_finite_samples == 0)
          row.verdict = Verdict::became_non_finite;
      }
    } else {
      row.verdict = b ? Verdict::only_in_base : Verdict::only_in_candidate;
    }
    report.rows.push_back(std::move(row));
  }
  std::stable_sort(report.rows.begin(), report.rows.end(), [](const Row& a, const Row& b) {
    const bool a_only = !a.ratio, b_only = !b.ratio;
    if (a_only != b_only) return b_only;
    return sort_weight(a) > sort_weight(b);
  });
  return report;
}

std::vector<const Row*> regressions(const Report& report, double pct) {
  std::vector<const Row*> out;
  for (const auto& r : report.rows)
    if ((r.verdict == Verdict::slower && r.change_pct() > pct) ||
        r.verdict == Verdict::became_non_finite)
      out.push_back(&r);
  return out;
}

}  // namespace cg::compare
