// `profile --format table`: a module table beside the operation table, self before total, shares
// of wall time, and "host-side" said when the traces have no device_sync.
#include "cli/profile_text.hpp"

#include <gtest/gtest.h>

namespace {

TEST(ProfileTable, ModuleAndOperationTablesWithSharesOfWallTime) {
  cg::runtime::ProfileReport r;
  r.step_time_ns = 1600;
  r.steps = 2;
  r.thread_busy_ns = {1000, 600};
  r.has_module_scopes = true;
  cg::runtime::ProfileRow layer{"model.layers.0", "", {2, 1200, 600, 500, 700, 500, 700}, 0.5};
  layer.self_ns = 800;
  layer.total_share = 0.75;
  r.module_scopes.push_back(layer);
  cg::runtime::ProfileRow op{
      "operation:infer:f:0", "matmul", {2, 900, 450, 400, 500, 400, 500}, 0.5625};
  op.self_ns = 900;
  op.total_share = 0.5625;
  r.operations.push_back(op);
  std::string t = cg::cli::profile_table(r, 2, 50);
  EXPECT_NE(t.find("Wall time 1.6 µs over 2 traces, 2 threads"), std::string::npos) << t;
  EXPECT_NE(t.find("2 steps, 800 ns per step (all threads)"), std::string::npos) << t;
  EXPECT_NE(t.find("per step per thread: 500 ns 300 ns"), std::string::npos) << t;
  EXPECT_NE(t.find("timings are host-side"), std::string::npos) << t;
  auto module_row = t.find("model.layers.0  800 ns  50.0%  1.2 µs  75.0%      2  500 ns  700 ns");
  EXPECT_NE(module_row, std::string::npos) << t;
  auto op_row = t.find("operation:infer:f:0  matmul  900 ns  56.2%");
  EXPECT_NE(op_row, std::string::npos) << t;
  EXPECT_LT(module_row, op_row);  // the module table comes first
  r.host_side = false;
  EXPECT_EQ(cg::cli::profile_table(r, 2, 50).find("host-side"), std::string::npos);
}

TEST(ProfileTable, Durations) {
  EXPECT_EQ(cg::cli::format_duration(850), "850 ns");
  EXPECT_EQ(cg::cli::format_duration(12300), "12.3 µs");
  EXPECT_EQ(cg::cli::format_duration(4560000), "4.56 ms");
  EXPECT_EQ(cg::cli::format_duration(1234500000), "1.234 s");
}

}  // namespace
