#include "runtime/reader.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/record_log.hpp"
#include "runtime/report_json.hpp"
#include "trace_test_util.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace cg::runtime {
namespace {

using testing::fixture;
using ::testing::HasSubstr;
using testing::kMetaV3;
using testing::load;
using testing::op_line;
using testing::write_temp;

// Runs `f` and returns the InputError's message ("file:line: what"); fails if nothing is thrown.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return {};
}

TEST(Reader, SeedV3JsonlIsReadWithSortedFeaturesAndTimings) {
  auto l = load(fixture("v3_seed.jsonl"));
  EXPECT_EQ(l.info.form, TraceForm::jsonl);
  EXPECT_EQ(l.info.meta.schema, Schema::v3);
  EXPECT_EQ(l.info.meta.cargo_features, std::vector<std::string>{"cuda"});
  EXPECT_EQ(l.info.operations, 4u);
  EXPECT_EQ(l.info.edge_timings, 2u);
  const auto& mm = l.aggregate.operations.at("operation:train:f:0");
  EXPECT_EQ(mm.timing.samples(), 2u);
  EXPECT_EQ(mm.timing.total_ns(), 400u);
  EXPECT_EQ(mm.timing.min_ns(), 100u);
  EXPECT_EQ(mm.timing.max_ns(), 300u);
  EXPECT_EQ(mm.by_phase.at("train").samples(), 2u);
  auto edge = l.aggregate.edges.at({"operation:train:f:0", "operation:train:f:1"});
  EXPECT_EQ(edge.samples(), 2u);
  EXPECT_EQ(edge.total_ns(), 16u);
}

TEST(Reader, PrettyDocumentIsDetectedAsDocument) {
  auto l = load(fixture("v1_document.json"));
  EXPECT_EQ(l.info.form, TraceForm::document);
  EXPECT_EQ(l.info.meta.analysis_id, "analysis:a1");
  EXPECT_EQ(l.info.tensors, 1u);
  EXPECT_EQ(l.info.gradients, 1u);
}

TEST(Reader, OneLineDocumentIsDetectedAsDocument) {
  auto p =
      write_temp("doc1.json",
                 R"({"schema":"candle-graph/runtime/2","run":{"entrypoint":"e","profile":"p"},)"
                 R"("operations":[{"event_id":"o1","op":"add","static_id":"s","duration_ns":5}]})");
  auto l = load(p);
  EXPECT_EQ(l.info.form, TraceForm::document);
  EXPECT_EQ(l.aggregate.operations.at("s").timing.total_ns(), 5u);
}

TEST(Reader, OneLineMetaOnlyJsonlIsJsonlNotABrokenDocument) {
  // The reference parsed a single line as a document and failed for lack of `run` (§1.4 quirk).
  auto l = load(fixture("meta_only.jsonl"));
  EXPECT_EQ(l.info.form, TraceForm::jsonl);
  EXPECT_EQ(l.info.meta.entrypoint, "forward");
  EXPECT_EQ(l.info.operations, 0u);
}

TEST(Reader, EmptyInputIsAnError) {
  auto p = write_temp("empty.jsonl", "  \n\n ");
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("empty runtime evidence input"));
}

TEST(Reader, MissingFileNamesThePath) {
  EXPECT_THAT(error_of([&] { load("/nonexistent/trace.jsonl"); }),
              HasSubstr("/nonexistent/trace.jsonl"));
}

TEST(Reader, MetaMayComeLaterInV3ButOnlyOnce) {
  auto p = write_temp("late_meta.jsonl", op_line("infer-op-0-1", "s", 5) + kMetaV3);
  EXPECT_EQ(load(p).info.operations, 1u);
  auto dup = write_temp("dup_meta.jsonl", std::string(kMetaV3) + kMetaV3);
  EXPECT_THAT(error_of([&] { load(dup); }), HasSubstr("dup_meta.jsonl:2: duplicate meta"));
}

TEST(Reader, MissingMetaIsAnError) {
  auto p = write_temp("no_meta.jsonl", op_line("infer-op-0-1", "s", 5));
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("missing a meta record"));
}

TEST(Reader, UnknownSchemaIsRejected) {
  auto p = write_temp(
      "schema5.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/5","entrypoint":"e","profile":"p"})");
  EXPECT_THAT(error_of([&] { load(p); }),
              HasSubstr("schema5.jsonl:1: unsupported schema `candle-graph/runtime/5`"));
}

TEST(Reader, DuplicateIdsAcrossKindsAreRejectedWithBothLines) {
  auto p = write_temp(
      "dup_kinds.jsonl",
      std::string(kMetaV3) + op_line("x1", "s", 5) +
          R"({"kind":"gradient","event_id":"x1","root":"vb","key":"w","state":"missing"})"
          "\n");
  EXPECT_THAT(error_of([&] { load(p); }),
              HasSubstr("dup_kinds.jsonl:3: duplicate event_id `x1` (first on line 2)"));
}

TEST(Reader, DuplicateSeedShapedIdIsRejected) {
  auto p = write_temp("dup_seed.jsonl", std::string(kMetaV3) + op_line("infer-op-0-1", "s", 5) +
                                            op_line("infer-op-0-2", "s", 5) +
                                            op_line("infer-op-0-1", "s", 5));
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("dup_seed.jsonl:4: duplicate event_id"));
}

TEST(Reader, SameCounterAtDifferentStepsIsNotADuplicate) {
  auto p = write_temp("same_counter.jsonl", std::string(kMetaV3) + op_line("infer-op-0-7", "s", 5) +
                                                op_line("infer-op-1-7", "s", 6));
  EXPECT_EQ(load(p).info.operations, 2u);
}

TEST(Reader, EmptyEventIdIsRejected) {
  auto p = write_temp("empty_id.jsonl", std::string(kMetaV3) + op_line("", "s", 5));
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr(":2: empty event_id is not allowed"));
}

TEST(Reader, GradientStateNormRules) {
  auto grad = [](const std::string& rest) {
    return std::string(kMetaV3) + R"({"kind":"gradient","event_id":"g","root":"vb","key":"w",)" +
           rest + "}\n";
  };
  EXPECT_THAT(
      error_of([&] { load(write_temp("g1.jsonl", grad(R"("state":"present","norm":0.0)"))); }),
      HasSubstr("use state `zero`"));
  EXPECT_THAT(error_of([&] { load(write_temp("g2.jsonl", grad(R"("state":"zero","norm":0.5)"))); }),
              HasSubstr("requires norm 0"));
  EXPECT_THAT(
      error_of([&] { load(write_temp("g3.jsonl", grad(R"("state":"missing","norm":1.0)"))); }),
      HasSubstr("must not carry a norm"));
  EXPECT_THAT(
      error_of([&] { load(write_temp("g4.jsonl", grad(R"("state":"non_finite","norm":1.0)"))); }),
      HasSubstr("non-finite norm"));
  EXPECT_THAT(error_of([&] { load(write_temp("g5.jsonl", grad(R"("state":"exploded")"))); }),
              HasSubstr("not one of present, missing, zero, non_finite"));
  // Accepted: present/zero without a norm, zero with −0.0.
  EXPECT_EQ(load(write_temp("g6.jsonl", grad(R"("state":"present")"))).info.gradients, 1u);
  EXPECT_EQ(load(write_temp("g7.jsonl", grad(R"("state":"zero","norm":-0.0)"))).info.gradients, 1u);
}

TEST(Reader, MissingRequiredFieldNamesFieldAndType) {
  auto p = write_temp("no_op.jsonl",
                      std::string(kMetaV3) + R"({"kind":"operation","event_id":"o","inputs":[]})");
  EXPECT_THAT(error_of([&] { load(p); }),
              HasSubstr("no_op.jsonl:2: operation record is missing field `op` (string)"));
  auto q = write_temp(
      "bad_type.jsonl",
      std::string(kMetaV3) + R"({"kind":"operation","event_id":"o","op":"x","duration_ns":"12"})");
  EXPECT_THAT(error_of([&] { load(q); }),
              HasSubstr("field `duration_ns`: expected an unsigned integer"));
}

TEST(Reader, UnknownKindAndUnknownFields) {
  auto p = write_temp("kind.jsonl", std::string(kMetaV3) + R"({"kind":"banana","event_id":"b"})");
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("unknown record kind `banana`"));
  auto q = write_temp("extra.jsonl",
                      std::string(kMetaV3) +
                          R"({"future":{"x":[1,2]},"kind":"operation","event_id":"o","op":"x"})");
  EXPECT_EQ(load(q).aggregate.operations_without_static_id, 1u);
}

TEST(Reader, TwoObjectsOnOneLineAreRejected) {
  auto p = write_temp("two.jsonl", std::string(kMetaV3) +
                                       R"({"kind":"operation","event_id":"o","op":"x"} {"a":1})");
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("two.jsonl:2: trailing content"));
}

TEST(Reader, GarbageLinesFailStrictlyAndAreCountedLeniently) {
  EXPECT_THAT(error_of([&] { load(fixture("garbage_lines.jsonl")); }),
              HasSubstr("garbage_lines.jsonl:3: invalid JSON"));
  ReadOptions lenient;
  lenient.lenient = true;
  auto l = load(fixture("garbage_lines.jsonl"), lenient);
  EXPECT_EQ(l.info.skipped_lines, 2u);
  ASSERT_EQ(l.info.skipped_examples.size(), 2u);
  EXPECT_EQ(l.info.skipped_examples[0].line, 3u);
  EXPECT_EQ(l.info.skipped_examples[1].line, 4u);
  // The good lines around them are all there.
  EXPECT_EQ(l.aggregate.operations.at("operation:infer:f:0").timing.total_ns(), 40u);
}

TEST(Reader, OversizedLineIsRejectedOrSkipped) {
  std::string big = R"({"kind":"operation","event_id":"o2","op":")" + std::string(5000, 'x') +
                    R"("})"
                    "\n";
  auto p = write_temp("big.jsonl", std::string(kMetaV3) + big + op_line("o3", "s", 9));
  ReadOptions small;
  small.max_line_bytes = 1024;
  EXPECT_THAT(error_of([&] { load(p, small); }),
              HasSubstr("big.jsonl:2: line is longer than 1024 bytes"));
  small.lenient = true;
  auto l = load(p, small);
  EXPECT_EQ(l.info.skipped_lines, 1u);
  EXPECT_EQ(l.info.operations, 1u);
  EXPECT_EQ(l.info.lines, 3u);
}

TEST(Reader, OversizedLastLineWithoutNewline) {
  auto p = write_temp("big_last.jsonl", std::string(kMetaV3) + std::string(3000, ' ') + "{");
  ReadOptions small;
  small.max_line_bytes = 1024;
  EXPECT_THAT(error_of([&] { load(p, small); }), HasSubstr("big_last.jsonl:2: line is longer"));
}

// A stream of NUL bytes with no newline (`--runtime-trace /dev/zero`) ran for minutes in
// silence: the over-long line was only reported at its newline. It now fails within the bound,
// naming the file, in lenient mode too (the rest of a line cannot be skipped forever).
void read_dev_zero_and_exit(bool lenient) {
  ::alarm(30);  // a hang ends the child with SIGALRM, which the predicate rejects
  ReadOptions small;
  small.max_line_bytes = 1024;
  small.chunk_bytes = 4096;
  small.lenient = lenient;
  try {
    load("/dev/zero", small);
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::_Exit(3);
  }
  std::_Exit(0);
}

TEST(ReaderDeathTest, DevZeroFailsWithinTheLineBound) {
  if (!std::filesystem::is_character_file("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  EXPECT_EXIT(read_dev_zero_and_exit(false), ::testing::ExitedWithCode(3),
              "/dev/zero:1: line is longer than 1024 bytes");
  EXPECT_EXIT(read_dev_zero_and_exit(true), ::testing::ExitedWithCode(3),
              "/dev/zero:1: no newline in the first [0-9]+ bytes of this line");
}

TEST(Reader, OversizedLineInTheMiddleOfABlockIsSkippedWhenLenient) {
  std::string text = kMetaV3;
  text += op_line("a-op-0-1", "s", 1);
  text += std::string(3000, 'z') + "\n";
  text += op_line("a-op-0-2", "s", 2);
  auto p = write_temp("mid.jsonl", text);
  for (std::size_t chunk : {std::size_t{512}, std::size_t{4096}, std::size_t{1} << 20}) {
    ReadOptions small;
    small.max_line_bytes = 1024;
    small.chunk_bytes = chunk;
    EXPECT_THAT(error_of([&] { load(p, small); }), HasSubstr("mid.jsonl:3: line is longer"));
    small.lenient = true;
    auto l = load(p, small);
    EXPECT_EQ(l.info.skipped_lines, 1u) << chunk;
    EXPECT_EQ(l.info.operations, 2u) << chunk;
    EXPECT_EQ(l.info.lines, 4u) << chunk;
  }
}

// The uniqueness check's memory limits end the read with the count, in lenient mode too.
TEST(Reader, FreeFormEventIdsPastTheLimitAreAnError) {
  std::string text = kMetaV3;
  for (int i = 0; i < 60; ++i)
    text += op_line("ev" + std::to_string(i), "s", 1);
  auto p = write_temp("freeform.jsonl", text);
  ReadOptions o;
  o.max_unshaped_event_ids = 50;
  EXPECT_THAT(error_of([&] { load(p, o); }),
              HasSubstr("freeform.jsonl:52: trace has more than 50 event ids that are not shaped"));
  o.lenient = true;
  EXPECT_THAT(error_of([&] { load(p, o); }), HasSubstr("more than 50 event ids"));
  o.max_unshaped_event_ids = 60;
  EXPECT_EQ(load(p, o).info.operations, 60u);
}

TEST(Reader, RestartingCountersPastTheCompareLimitAreAnError) {
  std::string text = kMetaV3;
  for (int step = 0; step < 5; ++step)
    for (int n = 0; n < 10; ++n)
      text += op_line("train-op-" + std::to_string(step) + "-" + std::to_string(n), "s", 1);
  auto p = write_temp("restart.jsonl", text);
  ReadOptions o;
  EXPECT_EQ(load(p, o).info.operations, 50u);  // valid: every id differs
  o.max_compared_event_ids = 20;
  EXPECT_THAT(error_of([&] { load(p, o); }),
              HasSubstr("restart.jsonl:22: trace has more than 20 event ids to compare in full"));
}

TEST(Reader, LenientDuplicatesPastTheLimitAreAnError) {
  std::string text = kMetaV3;
  for (int i = 0; i < 10; ++i)
    text += op_line("d" + std::to_string(i % 4), "s", 1);
  auto p = write_temp("dups.jsonl", text);
  ReadOptions o;
  o.lenient = true;
  TraceAggregate first_read;  // what one read finds (read_traces reads again without them)
  EXPECT_EQ(read_trace(p, first_read, o).duplicate_event_ids, 6u);
  EXPECT_EQ(load(p, o).info.skipped_lines, 6u);
  o.max_duplicate_event_ids = 5;
  EXPECT_THAT(error_of([&] { load(p, o); }),
              HasSubstr("dups.jsonl:11: trace has more than 5 repeated event ids"));
}

TEST(Reader, RecordLimitIsEnforcedEvenWhenLenient) {
  std::string text = kMetaV3;
  for (int i = 1; i <= 5; ++i)
    text += op_line("infer-op-0-" + std::to_string(i), "s", 1);
  auto p = write_temp("many.jsonl", text);
  ReadOptions limited;
  limited.max_records = 4;
  limited.lenient = true;
  EXPECT_THAT(error_of([&] { load(p, limited); }),
              HasSubstr("many.jsonl:5: trace has more than 4"));
}

TEST(Reader, DocumentLimitIsEnforced) {
  ReadOptions tiny;
  tiny.max_document_bytes = 64;
  // Too big to read as a document: it is then read as JSONL and its first line is not a record.
  EXPECT_THAT(error_of([&] { load(fixture("v1_document.json"), tiny); }),
              HasSubstr("v1_document.json:1: invalid JSON"));
}

TEST(Reader, V4CompleteTraceChecksEndCounts) {
  auto l = load(fixture("v4_two_threads.jsonl"));
  EXPECT_EQ(l.info.meta.schema, Schema::v4);
  ASSERT_TRUE(l.info.end.has_value());
  EXPECT_EQ(l.info.end->threads, 2u);
  EXPECT_EQ(l.aggregate.operations.at("operation:infer:f:1").timing.samples(), 2u);
}

TEST(Reader, V4WithoutEndIsTruncated) {
  EXPECT_THAT(error_of([&] { load(fixture("v4_truncated.jsonl")); }),
              HasSubstr("trace is truncated: no end record"));
  ReadOptions lenient;
  lenient.lenient = true;
  auto l = load(fixture("v4_truncated.jsonl"), lenient);
  EXPECT_TRUE(l.info.truncated);
  EXPECT_EQ(l.info.operations, 4u);
}

TEST(Reader, V4EndCountsMustMatch) {
  std::string text;
  std::ifstream in(fixture("v4_two_threads.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"kind\":\"edge_timing\"") != std::string::npos) continue;
    text += line + "\n";
  }
  auto p = write_temp("v4_damaged.jsonl", text);
  EXPECT_THAT(error_of([&] { load(p); }),
              HasSubstr("v4_damaged.jsonl:6: end record counts 4 operations and 1 edge_timings "
                        "but the trace has 4 and 0"));
}

TEST(Reader, V4RequiresTimelineFieldsMetaFirstAndEndLast) {
  std::string meta4 =
      R"({"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"e","profile":"p","phase":"infer"})"
      "\n";
  auto p = write_temp("v4_nostart.jsonl", meta4 + op_line("infer-op-0-1", "s", 4));
  EXPECT_THAT(error_of([&] { load(p); }),
              HasSubstr("v4_nostart.jsonl:2: runtime/4 operation is missing field `start_ns`"));
  auto q = write_temp(
      "v4_late_meta.jsonl",
      "\n" + std::string(R"({"kind":"end","operations":0,"edge_timings":0})") + "\n" + meta4);
  EXPECT_THAT(error_of([&] { load(q); }),
              HasSubstr("v4_late_meta.jsonl:2: unknown record kind `end`"));
  auto r = write_temp("v4_after_end.jsonl", meta4 +
                                                R"({"kind":"end","operations":0,"edge_timings":0})"
                                                "\n" +
                                                meta4);
  EXPECT_THAT(error_of([&] { load(r); }),
              HasSubstr("v4_after_end.jsonl:3: record after the `end`"));
}

TEST(Reader, EndInV3IsUnknown) {
  auto p = write_temp("v3_end.jsonl",
                      std::string(kMetaV3) + R"({"kind":"end","operations":0,"edge_timings":0})");
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("v3_end.jsonl:2: unknown record kind `end`"));
}

TEST(Reader, DocumentErrorsNameTheRecord) {
  auto p = write_temp(
      "doc_bad.json",
      R"({"schema":"candle-graph/runtime/1","run":{"entrypoint":"e","profile":"p"},)"
      "\n"
      R"("gradients":[{"event_id":"g","root":"r","key":"k","state":"present","norm":0}]})");
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("doc_bad.json: gradients[0]: gradient state"));
}

TEST(Reader, CrlfLinesAndBlankLinesAreAccepted) {
  auto p = write_temp("crlf.jsonl", std::string(kMetaV3) + "\r\n\r\n" + op_line("o1", "s", 3));
  EXPECT_EQ(load(p).info.operations, 1u);
}

TEST(Reader, SeveralTracesKeepTheirIdentityAndMerge) {
  auto rank0 = write_temp(
      "rank0.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"e","profile":"p","phase":"train","analysis_id":"A"})"
      "\n" +
          op_line("train-op-0-1", "s", 10) + op_line("train-op-0-2", "s", 20));
  auto rank1 = write_temp(
      "rank1.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"e","profile":"p","phase":"train","analysis_id":"B"})"
      "\n" +
          op_line("train-op-0-1", "s", 30));
  auto a = load(rank0);
  auto b = load(rank1);
  EXPECT_EQ(a.info.meta.analysis_id, "A");
  EXPECT_EQ(b.info.meta.analysis_id, "B");
  a.aggregate.merge(b.aggregate);
  const auto& s = a.aggregate.operations.at("s").timing;
  EXPECT_EQ(s.samples(), 3u);
  EXPECT_EQ(s.total_ns(), 60u);
  EXPECT_EQ(s.p50_ns(), 20u);
}

}  // namespace
}  // namespace cg::runtime

namespace cg::runtime {
namespace {

TEST(Reader, NullOptionalFieldsAreAbsent) {
  auto p = testing::write_temp(
      "nulls.jsonl",
      std::string(testing::kMetaV3) +
          R"({"kind":"operation","event_id":"o","op":"x","static_id":null,"step":null,"duration_ns":null,"output":null})");
  auto l = testing::load(p);
  EXPECT_EQ(l.aggregate.operations_without_static_id, 1u);
  EXPECT_EQ(l.aggregate.all_operations.samples(), 0u);
}

// What a reading produced (info, every operation's timing) or its error, to compare the block
// reader with line-at-a-time parsing, which must agree exactly.
std::string outcome(const std::filesystem::path& path, ReadOptions options, bool line_at_a_time) {
  options.line_at_a_time = line_at_a_time;
  try {
    auto l = load(path, options);
    JsonWriter w;
    write_trace_info(w, l.info);
    w.begin_object();
    for (const auto& [id, stats] : l.aggregate.operations) {
      w.field(id,
              std::to_string(stats.observations) + "/" + std::to_string(stats.timing.total_ns()));
    }
    w.end_object();
    RecordLog log;
    (void)read_trace(path, log, options);
    return w.take() + "\n" + log.text();
  } catch (const InputError& e) {
    return std::string("error: ") + e.what();
  }
}

void expect_modes_agree(const std::filesystem::path& path, ReadOptions options = {}) {
  for (bool lenient : {false, true}) {
    options.lenient = lenient;
    EXPECT_EQ(outcome(path, options, false), outcome(path, options, true))
        << path << (lenient ? " (lenient)" : " (strict)");
  }
}

TEST(Reader, AnObjectRunningOntoTheNextLineIsRefusedAtItsFirstLine) {
  auto p = write_temp("runs_on.jsonl", std::string(kMetaV3) + op_line("o1", "s", 1) +
                                           R"({"kind":"operation","event_id":"o2","op":"x",)"
                                           "\n"
                                           R"("static_id":"s","duration_ns":2})"
                                           "\n" +
                                           op_line("o3", "s", 4));
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("runs_on.jsonl:3: invalid JSON"));
  ReadOptions lenient;
  lenient.lenient = true;
  auto l = load(p, lenient);
  EXPECT_EQ(l.info.skipped_lines, 2u);  // both halves; the records around them are read
  EXPECT_EQ(l.aggregate.operations.at("s").timing.total_ns(), 5u);
  expect_modes_agree(p);
}

TEST(Reader, AnUnfinishedObjectAfterAWholeOneOnItsLineIsTrailingContent) {
  // Found by the fuzzer: the block's stream drops the unfinished object at its end, so the line
  // looked whole there.
  auto p = write_temp(
      "unfinished.jsonl",
      R"({"kind":"meta","schema":"candle-graph/runtime/2","entrypoint":"m","profile":"d"}{"kind":"meta")"
      "\n"
      R"(,"sc{)");
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("unfinished.jsonl:1: invalid JSON"));
  expect_modes_agree(p);
}

TEST(Reader, InvalidUtf8FailsTheBlocksStreamButOnlyItsLine) {
  // Bad UTF-8 fails the structural pass of the whole block; every other line still reads.
  auto p = write_temp("utf8.jsonl",
                      std::string(kMetaV3) + op_line("o1", "s", 1) +
                          "{\"kind\":\"operation\",\"event_id\":\"o2\",\"op\":\"\xff\"}\n" +
                          op_line("o3", "s", 4));
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("utf8.jsonl:3: invalid JSON"));
  ReadOptions lenient;
  lenient.lenient = true;
  auto l = load(p, lenient);
  EXPECT_EQ(l.info.skipped_lines, 1u);
  EXPECT_EQ(l.aggregate.operations.at("s").timing.total_ns(), 5u);
  expect_modes_agree(p);
}

TEST(Reader, BadLinesMidBlockLeaveTheRestOfTheBlockIntact) {
  std::string text = kMetaV3;
  for (int i = 0; i < 50; ++i) {
    text += op_line("a" + std::to_string(i), "s", 1);
  }
  text +=
      R"({"kind":"operation","event_id":"t","op":"x"} {"kind":"operation","event_id":"u","op":"y"})"
      "\n";
  text += "[1,2]\n{\"kind\":\"operation\",\"event_id\":\"v\",\"op\":1}\n\n   \n";
  text += kMetaV3;  // a second meta: the validator's error, the JSON was whole
  for (int i = 0; i < 50; ++i) {
    text += op_line("b" + std::to_string(i), "s", 2);
  }
  auto p = write_temp("mid_block.jsonl", text);
  EXPECT_THAT(error_of([&] { load(p); }), HasSubstr("mid_block.jsonl:52: trailing content"));
  ReadOptions lenient;
  lenient.lenient = true;
  auto l = load(p, lenient);
  EXPECT_EQ(l.info.skipped_lines, 4u);
  EXPECT_EQ(l.info.operations, 100u);
  EXPECT_EQ(l.aggregate.operations.at("s").timing.total_ns(), 150u);
  expect_modes_agree(p);
  ReadOptions skip;
  skip.skip_lines = {{10, "told to"}, {53, "told to"}, {60, "told to"}};
  expect_modes_agree(p, skip);
  EXPECT_EQ(load(p,
                 [&] {
                   auto o = skip;
                   o.lenient = true;
                   return o;
                 }())
                .info.operations,
            98u);
}

TEST(Reader, ManyBlocksWithBadLinesAgreeWithLineAtATime) {
  // ~9 MB: more than two of the reader's 4 MiB blocks, a bad line now and then, lines of every
  // length around the block edges.
  std::string text = kMetaV3;
  for (int i = 0; i < 45000; ++i) {
    if (i % 7919 == 0) {
      text += "{\"kind\":\"operation\",\"event_id\":\"bad" + std::to_string(i) + "\",\"op\":\n";
    } else {
      text +=
          op_line("e" + std::to_string(i),
                  "s" + std::to_string(i % 13) + std::string(static_cast<std::size_t>(i % 31), 'x'),
                  static_cast<std::uint64_t>(i));
    }
  }
  auto p = write_temp("many_blocks.jsonl", text);
  ReadOptions lenient;
  lenient.lenient = true;
  auto l = load(p, lenient);
  EXPECT_EQ(l.info.skipped_lines, 6u);
  EXPECT_EQ(l.info.operations, 45000u - 6u);
  EXPECT_EQ(l.info.lines, 45001u);
  expect_modes_agree(p);
  // 64 KiB chunks: ~140 reads ahead on the worker thread, each behind an unfinished line (the
  // TSan run includes this test).
  ReadOptions chunked;
  chunked.chunk_bytes = std::size_t{64} << 10;
  expect_modes_agree(p, chunked);
  chunked.lenient = true;
  EXPECT_EQ(load(p, chunked).info.operations, 45000u - 6u);
}

std::string record_log(const std::filesystem::path& path) {
  RecordLog log;
  (void)read_trace(path, log, {});
  return log.text();
}

TEST(Reader, EveryRecordKindReadsTheSameHoweverItIsSpelled) {
  // The same records twice: as a profiler writes them and spelled otherwise. The plain reader
  // takes a block's lines until the first it cannot (here: bytes outside ASCII, then escapes, a
  // key repeated, `kind` not first), simdjson the rest; both must hand on the same records.
  const char* meta_plain =
      R"({"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"m::forward","profile":"dev","cargo_features":["b","a"],"cfg":[],"analysis_id":null,"phase":"train"})";
  const char* meta_fancy =
      R"({ "kind" : "meta" , "schema":"candle-graph/runtime/3","entrypoint" : "m::forward","profile":"dev","cargo_features":[ "b" , "a" ],"cfg":[ ],"analysis_id":null,"phase":"train" })";
  std::vector<std::pair<std::string, std::string>> records = {
      // Plain in both files, numbers spelled differently.
      {R"({"kind":"gradient","event_id":"g1","root":"vb","key":"a.weight","state":"present","norm":0.1,"step":2})",
       R"({"kind":"gradient","event_id":"g1","root":"vb","key":"a.weight","state":"present","norm":1e-1,"step":2})"},
      {R"({"kind":"gradient","event_id":"g2","root":"vb","key":"b.weight","state":"missing","norm":null})",
       R"({"kind":"gradient","event_id":"g2","root":"vb","key":"b.weight","state":"missing","norm":null}	)"},
      {R"({"kind":"value","event_id":"v1","static_id":"tensor:train:f:0","min":-1.5e-3,"max":123456789012345678901234567890,"abs_max":2.2250738585072014E-308,"nonfinite_count":3,"saturated_count":0})",
       R"({"kind":"value","event_id":"v1","static_id":"tensor:train:f:0","min":-0.0015,"max":1.2345678901234567890123456789e29,"abs_max":22.250738585072014e-309,"nonfinite_count":3,"saturated_count":0})"},
      // Plain in the first file, simdjson's in the second.
      {R"({"kind":"tensor","event_id":"t1","static_id":"tensor:train:f:0","shape":[2,3,4096],"dtype":"F32","device":"cpu","contiguous":true,"requires_grad":false,"step":7})",
       R"({"event_id":"t1","kind":"tensor","static_id":"tensor:train:f:0","shape":[ 2 , 3 ,4096 ],"dtype":"F\u0033\u0032","device":"cpu","contiguous":true,"requires_grad":false,"step":7})"},
      {R"({"kind":"operation","event_id":"o1","op":"matmul","static_id":"operation:train:f:1","inputs":["tensor:a","tensor:b"],"step":0,"duration_ns":18446744073709551615,"source":"src/model.rs:12:5","output":null})",
       R"({"kind" :"operation","event_id":"o1","op":"mat\u006dul","static_id":"operation:train:f:1","inputs":["tensor:a","tensor:\u0062"],"step":0,"duration_ns":18446744073709551615,"source":"src/model.rs:12:5","output":null})"},
      {R"({"kind":"edge_timing","event_id":"e1","from_static_id":"operation:train:f:1","to_static_id":"operation:train:f:2","duration_ns":30,"step":0})",
       R"({"kind":"edge_timing","event_id":"e1","from_static_id":"operation:train:f:1","to_static_id":"operation:train:f:\u0032","duration_ns":30,"step":0})"},
      // simdjson's in both.
      {R"({"kind":"operation","event_id":"o2","op":"softmax","static_id":"operation:train:f:2","step":1,"duration_ns":0,"source":"src/modèle.rs:3:1"})",
       R"({"kind":"operation","event_id":"o2","op":"relu","op":"softmax","static_id":"operation:train:f:2","step":1,"duration_ns":0,"source":"src/mod\u00e8le.rs:3:1"})"},
  };
  std::string plain = std::string(meta_plain) + "\n", fancy = std::string(meta_fancy) + "\n";
  for (const auto& [a, b] : records) {
    plain += a + "\n";
    fancy += b + "\n";
  }
  auto p = write_temp("spelled_plain.jsonl", plain);
  auto f = write_temp("spelled_fancy.jsonl", fancy);
  std::string log = record_log(p);
  EXPECT_EQ(log, record_log(f));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 8);
  EXPECT_THAT(log, HasSubstr("entrypoint=10:m::forward"));
  EXPECT_THAT(log, HasSubstr("shape=3 =2 =3 =4096 dtype=3:F32"));
  EXPECT_THAT(log, HasSubstr("op=6:matmul"));
  EXPECT_THAT(log, HasSubstr("duration_ns=18446744073709551615"));
  EXPECT_THAT(log, HasSubstr("op=7:softmax"));
  EXPECT_THAT(log, HasSubstr("source=18:src/modèle.rs:3:1"));
  EXPECT_THAT(log, HasSubstr("norm=0x1.999999999999ap-4"));
  EXPECT_THAT(log, HasSubstr("min=-0x1.89374bc6a7efap-10"));
  EXPECT_THAT(log, HasSubstr("abs_max=0x1p-1022"));
  expect_modes_agree(p);
  expect_modes_agree(f);
}

TEST(Reader, ALineThePlainReaderRefusesIsReadBySimdjsonInTheSameBlock) {
  // Lines the plain reader hands to simdjson mid-block (an escape, a nested object in an unknown
  // field, a type error, a number simdjson must judge) keep their records and the reference's
  // errors, and the lines after them still read.
  std::string text = kMetaV3;
  for (int i = 0; i < 20; ++i)
    text += op_line("a" + std::to_string(i), "s", 1);
  text += R"({"kind":"operation","event_id":"x1","op":"m\"q","static_id":"s","duration_ns":2})"
          "\n";
  text +=
      R"({"kind":"operation","event_id":"x2","op":"m","static_id":"s","duration_ns":4,"extra":{"a":[1,{"b":2}]}})"
      "\n";
  text += R"({"kind":"operation","event_id":"x3","op":"m","static_id":"s","duration_ns":-8})"
          "\n";
  text += R"({"kind":"operation","event_id":"x4","op":"m","static_id":"s","duration_ns":1.0})"
          "\n";
  text += R"({"kind":"operation","event_id":"x5","op":"m","static_id":"s","duration_ns":01})"
          "\n";
  text +=
      R"({"kind":"operation","event_id":"x6","op":"m","static_id":"s","duration_ns":18446744073709551616})"
      "\n";
  for (int i = 0; i < 20; ++i)
    text += op_line("b" + std::to_string(i), "s", 8);
  auto p = write_temp("refused.jsonl", text);
  EXPECT_THAT(error_of([&] { load(p); }),
              HasSubstr("refused.jsonl:24: field `duration_ns`: expected an unsigned integer"));
  ReadOptions lenient;
  lenient.lenient = true;
  auto l = load(p, lenient);
  EXPECT_EQ(l.info.skipped_lines, 4u);
  EXPECT_EQ(l.info.operations, 42u);
  EXPECT_EQ(l.aggregate.operations.at("s").timing.total_ns(), 20u + 2u + 4u + 160u);
  expect_modes_agree(p);
  expect_modes_agree(p, lenient);
}

TEST(Reader, BlockEdgesAnywhereChangeNothing) {
  // Plain lines, lines only simdjson reads, bad lines and blank ones, read in blocks of one to a
  // few lines: every block starts plain again after a line that sent the last one to simdjson.
  std::string text = kMetaV3;
  for (int i = 0; i < 300; ++i) {
    std::string id = "e" + std::to_string(i);
    switch (i % 9) {
      case 2:
        text += R"({"kind":"operation","event_id":")" + id +
                R"(","op":"m\u0061tmul","static_id":"s","duration_ns":3})"
                "\n";
        break;
      case 5:
        text += R"({"kind":"operation","event_id":")" + id + R"(","op":"m","duration_ns":)" +
                "\n";  // unfinished
        break;
      case 7:
        text += "\n  \r\n";
        [[fallthrough]];
      default:
        text += op_line(id, "s" + std::to_string(i % 4), static_cast<std::uint64_t>(i));
    }
  }
  auto p = write_temp("edges.jsonl", text);
  for (std::size_t chunk : {29u, 64u, 200u, 1000u}) {
    ReadOptions small;
    small.chunk_bytes = chunk;
    small.max_line_bytes = 256;
    expect_modes_agree(p, small);
    small.lenient = true;
    small.line_at_a_time = false;
    RecordLog log;
    auto info = read_trace(p, log, small);
    EXPECT_EQ(info.skipped_lines, 33u) << chunk;
    EXPECT_EQ(std::count(log.text().begin(), log.text().end(), '\n'), 1 + 300 - 33) << chunk;
  }
}

TEST(Reader, BytesOutsideUtf8AfterABlocksLastObjectAreTrailingContent) {
  // Found by the fuzzer: where an object was the last in its block's stream, a byte simdjson does
  // not index (not UTF-8) between it and the line's end went unseen.
  std::string bad = R"({"kind":"gradient","event_id":"g2","root":"vb","key":"b","state":"missing"})"
                    "\xfc\t\n";
  auto p = write_temp("after_last.jsonl",
                      std::string(kMetaV3) + op_line("o1", "s", 1) + bad + op_line("o3", "s", 4));
  for (std::size_t chunk = 1; chunk < 400; chunk += 3) {
    ReadOptions small;
    small.chunk_bytes = chunk;
    small.max_line_bytes = 128;
    EXPECT_THAT(error_of([&] { (void)load(p, small); }),
                HasSubstr("after_last.jsonl:3: invalid JSON (The input is not valid UTF-8)"))
        << chunk;
    expect_modes_agree(p, small);
  }
}

TEST(Reader, NumbersOfManyDigitsReadExactlyOnEveryPath) {
  // Found by the fuzzer: simdjson's On-Demand parser read 0.518446744073709551616 (21 significant
  // digits) as 0.00194; the plain reader's from_chars read it right. Every path now agrees with
  // the correctly rounded value (0x1.0971da05074dap-1, as strtod gives).
  std::string text = kMetaV3;
  text +=
      R"({"kind":"gradient","event_id":"g1","root":"vb","key":"a","state":"present","norm":0.518446744073709551616})"
      "\n";  // plain
  text +=
      R"({"kind":"gradient","event_id":"g2","root":"v\u0062","key":"a","state":"present","norm":0.518446744073709551616})"
      "\n";  // simdjson's
  auto p = write_temp("long_numbers.jsonl", text);
  for (bool line_at_a_time : {false, true}) {
    ReadOptions options;
    options.line_at_a_time = line_at_a_time;
    RecordLog log;
    (void)read_trace(p, log, options);
    std::string want = "norm=" + [] {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%a", std::strtod("0.518446744073709551616", nullptr));
      return std::string(buf);
    }();
    EXPECT_EQ(std::count(log.text().begin(), log.text().end(), '\n'), 3);
    std::size_t first = log.text().find(want);
    ASSERT_NE(first, std::string::npos) << log.text();
    EXPECT_NE(log.text().find(want, first + 1), std::string::npos) << log.text();
  }
  expect_modes_agree(p);
}

// runtime/4 meta's pid and start_unix_ns (the Chrome export's process tracks and timeline) are
// read alike by the plain reader and, for a line with an escape, by simdjson.
TEST(Reader, MetaPidAndStartUnixNsAreReadByBothParsers) {
  std::ifstream in(fixture("v4_two_threads.jsonl"));
  std::string meta, rest, line;
  std::getline(in, meta);
  while (std::getline(in, line))
    rest += line + "\n";
  const std::string from = R"("start_unix_ns":1,"pid":7)";
  ASSERT_NE(meta.find(from), std::string::npos);
  std::string big = meta;
  big.replace(big.find(from), from.size(),
              R"("start_unix_ns":1764800000123456789,"pid":4294967296)");
  std::string escaped = big;
  escaped.replace(escaped.find("tiny::forward"), 13, R"(tiny::forward\u0021)");
  std::string absent = meta;
  absent.replace(absent.find(from), from.size() + 1, "");
  for (bool line_at_a_time : {false, true}) {
    ReadOptions o;
    o.line_at_a_time = line_at_a_time;
    for (const auto& [name, text] :
         {std::pair{"pid_plain.jsonl", big}, std::pair{"pid_escaped.jsonl", escaped}}) {
      RecordLog log;
      const auto info = read_trace(write_temp(name, text + "\n" + rest), log, o);
      EXPECT_EQ(info.meta.pid, std::optional<std::uint64_t>(4294967296u)) << name;
      EXPECT_EQ(info.meta.start_unix_ns, std::optional<std::uint64_t>(1764800000123456789u))
          << name;
      EXPECT_THAT(log.text(), HasSubstr(" pid=4294967296 start_unix_ns=1764800000123456789"));
    }
    RecordLog log;
    const auto info = read_trace(write_temp("pid_absent.jsonl", absent + "\n" + rest), log, o);
    EXPECT_FALSE(info.meta.pid);
    EXPECT_FALSE(info.meta.start_unix_ns);
  }
  std::string bad = meta;
  bad.replace(bad.find(R"("pid":7)"), 7, R"("pid":"7")");
  RecordLog log;
  try {
    (void)read_trace(write_temp("pid_bad.jsonl", bad + "\n" + rest), log);
    ADD_FAILURE() << "a string pid is an error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("pid_bad.jsonl:1"));
    EXPECT_THAT(e.what(), HasSubstr("pid"));
  }
}

}  // namespace
}  // namespace cg::runtime
