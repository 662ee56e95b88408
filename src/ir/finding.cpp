#include "ir/model.hpp"
#include "ir/stable_id.hpp"

namespace cg::ir {

Finding make_finding(std::string rule, Severity severity, Confidence confidence,
                     std::string message, std::string source, std::vector<std::string> related) {
  Finding f;
  f.id = finding_id(rule, source, message);
  f.rule = std::move(rule);
  f.severity = severity;
  f.confidence = confidence;
  f.message = std::move(message);
  if (!source.empty()) f.source = std::move(source);
  f.related = std::move(related);
  return f;
}

}  // namespace cg::ir
