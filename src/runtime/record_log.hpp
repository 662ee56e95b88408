#pragma once
// Every record a reading hands on, one line of text each with every field (numbers exact: doubles
// as hexadecimal floats). The reader's differential tests compare two readings with it: the
// runtime_trace fuzz target and tests/runtime/reader_test.cpp require the plain, stream and
// line-at-a-time paths of the JSONL importer to hand on the same records.
#include <string>

#include "runtime/records.hpp"

namespace cg::runtime {

class RecordLog : public RecordSink {
 public:
  void meta(const RunMeta& m) override;
  void tensor(const TensorRecord& t) override;
  void operation(const OperationRecord& o) override;
  void gradient(const GradientRecord& g) override;
  void value(const ValueRecord& v) override;
  void edge_timing(const EdgeTimingRecord& e) override;
  void module_scope(const ModuleScopeRecord& m) override;
  void stats(const StatsRecord& s) override;
  void end(const EndRecord& e) override;

  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace cg::runtime
