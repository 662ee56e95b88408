#pragma once
// The shared half of the numeric checks: a NaN hazard found at an operation is reported at the
// end of its entrypoint's run with its impact — it reaches a loss, poisons gradients, reaches an
// output, or stays local — which sets severity; one finding per (rule, operation) over the crate,
// replaced only by a worse impact from a later entrypoint.
#include <map>
#include <string>
#include <vector>

#include "analysis/checks/check.hpp"

namespace cg::analysis::checks {

struct Hazard {
  std::string rule;
  bool proven = false;   // on every execution
  bool library = false;  // inside an expanded candle-nn function
  std::string message, source, tensor, op;
};

// The message every zero-times-infinity hazard starts with.
extern const char* const kZeroTimesLogMessage;

class HazardReport {
 public:
  void report(const RunFacts& run, const std::vector<Hazard>& hazards, Reporter& out);

 private:
  std::map<std::string, std::size_t> at_;  // rule + '\n' + op -> index into ir.findings
};

// A numeric check: hazards found at operations during a run, reported with their impact at its
// end. A subclass only says which operations are hazards (`operation`, pushing to `hazards_`).
class HazardCheck : public Check {
 public:
  void run_begin() override { hazards_.clear(); }
  void run_end(const RunFacts& run, Reporter& out) override { report_.report(run, hazards_, out); }

 protected:
  std::vector<Hazard> hazards_;

 private:
  HazardReport report_;
};

}  // namespace cg::analysis::checks
