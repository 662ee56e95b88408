#include "cli/app.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <filesystem>
#include <iostream>

#include "checkpoint/checkpoint_source.hpp"
#include "checkpoint/ir_adapter.hpp"
#include "checkpoint/verify.hpp"
#include "cli/baseline.hpp"
#include "cli/checkpoint_view.hpp"
#include "cli/diagnostics.hpp"
#include "cli/options.hpp"
#include "cli/pipeline.hpp"
#include "cli/query_command.hpp"
#include "cli/summary_rows.hpp"
#include "query/mcp.hpp"
#include "runtime/chrome_export.hpp"
#include "runtime/merge_ir.hpp"
#include "runtime/report_json.hpp"
#include "rust/grammar.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"
#include "viewer/payload.hpp"

namespace cg::cli {

namespace {

constexpr const char* kVersion = "0.1.0";

// Diagnostics go to stderr in the chosen format; the gate is applied by the caller after every
// output is written.
void emit_diagnostics(const Analysis& a, const OutputOptions& out) {
  auto diags = diagnostics_of(a.ir);
  if (out.message_format == "json") {
    std::cerr << render_json_lines(diags, a.package_id, a.manifest_path);
  } else if (out.message_format == "sarif") {
    std::cerr << render_sarif(diags, kVersion);
  } else {
    std::cerr << render_human(diags, ::isatty(2) != 0);
  }
}

// Baselines run after every other output is written: --update-baseline writes the fingerprint,
// --check compares with one and prints the diff. Returns kExitGate on a change.
int baselines(const Analysis& a, const OutputOptions& out) {
  Baseline now = baseline_of(a.ir);
  if (!out.update_baseline.empty()) {
    write_file_atomic(out.update_baseline, write_baseline(now));
    std::cerr << "wrote baseline " << out.update_baseline << "\n";
  }
  if (out.check_baseline.empty()) return kExitOk;
  Baseline expected = parse_baseline(read_file(out.check_baseline), out.check_baseline);
  std::string diff = diff_baselines(expected, now);
  if (diff.empty()) {
    std::cerr << "baseline " << out.check_baseline << ": unchanged\n";
    return kExitOk;
  }
  std::cerr << "baseline " << out.check_baseline << " differs (- baseline, + now):\n" << diff;
  return kExitGate;
}

int gate(const Analysis& a, const OutputOptions& out, bool strict) {
  for (const auto& f : a.ir.findings) {
    if (strict && f.severity == ir::Severity::error && f.confidence == ir::Confidence::proven)
      return kExitGate;
    for (const auto& rule : out.deny)
      if (f.rule == rule) return kExitGate;
  }
  return kExitOk;
}

void write_or_print(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-")
    std::cout << text;
  else
    write_file_atomic(path, text);
}

std::string render_tree(const Analysis& a) {
  return render_summary(a);
}

}  // namespace

int run(const std::vector<std::string>& args) {
  if (auto problem = rust::grammar_abi_problem(rust::linked_grammar_abi())) {
    std::cerr << "error: " << *problem << "\n";
    return kExitUsage;
  }
  CLI::App app{"candle-graph: static analysis and profiling for Candle model crates",
               "candle-graph"};
  app.set_version_flag("--version", std::string("candle-graph ") + kVersion);
  app.require_subcommand(0, 1);
  app.footer(
      "Exit codes: 0 ok, 1 a --strict/--deny gate failed, 2 usage or input error.\n"
      "Example: candle-graph audit out/ examples/tiny-llama --config "
      "examples/tiny-llama/config.json");

  CrateOptions crate;
  EvidenceOptions evidence;
  OutputOptions out;

  auto* check = app.add_subcommand(
      "check",
      "Analyze a crate: IR to stdout or --output, diagnostics to stderr; fails on proven "
      "errors");
  add_crate_options(*check, crate);
  add_evidence_options(*check, evidence);
  add_output_options(*check, out, true);
  check->footer("Example: candle-graph check examples/tiny-llama --output model.json");

  auto* report = app.add_subcommand("report", "Like check, but fails only with --strict or --deny");
  add_crate_options(*report, crate);
  add_evidence_options(*report, evidence);
  add_output_options(*report, out, true);
  report->footer("Example: candle-graph report . --format tree");

  std::string audit_dir;
  auto* audit = app.add_subcommand(
      "audit", "Write a bundle: summary.txt, findings (all of them), model.json, model.html");
  audit->add_option("dir", audit_dir, "Output directory")->required();
  add_crate_options(*audit, crate);
  add_evidence_options(*audit, evidence);
  add_output_options(*audit, out, false);
  audit->footer("Example: candle-graph audit out/ examples/tiny-llama");

  auto* view = app.add_subcommand("view", "Write the offline interactive HTML viewer");
  add_crate_options(*view, crate);
  add_evidence_options(*view, evidence);
  view->add_option("--output,-o", out.output, "HTML file to write (default: model.html)");
  view->footer(
      "Example: candle-graph view examples/tiny-llama -o model.html "
      "[--runtime-trace run.jsonl] [--checkpoint model.safetensors]");

  auto* profile = app.add_subcommand(
      "profile", "Merge runtime traces into the analysis and print the timing report (JSON)");
  add_crate_options(*profile, crate);
  profile
      ->add_option("--runtime-trace", evidence.runtime_traces,
                   "Runtime trace to merge (repeat for several runs or ranks)")
      ->required();
  profile->add_flag("--lenient", evidence.lenient, "Skip bad trace lines and count them");
  profile->add_option("--output,-o", out.output, "Write the report here instead of stdout");
  profile->footer("Example: candle-graph profile examples/tiny-llama --runtime-trace run.jsonl");

  auto* verify_cmd = app.add_subcommand(
      "verify", "Check a safetensors checkpoint (headers only) against the parameter inventory");
  add_crate_options(*verify_cmd, crate);
  verify_cmd
      ->add_option("--checkpoint", evidence.checkpoint,
                   "safetensors file, *.index.json or checkpoint directory")
      ->required();
  verify_cmd->add_option("--prefix", evidence.prefix,
                         "Prefix a caller pushes before the root constructor");
  verify_cmd->add_option("--output,-o", out.output, "Write the JSON report here");
  verify_cmd->footer(
      "Example: candle-graph verify examples/tiny-llama --checkpoint model.safetensors");

  std::string summary_dtype;
  int summary_depth = -1;
  auto* summary_cmd = app.add_subcommand(
      "summary", "Print the torchinfo-style table: module tree, parameter shapes, counts, size");
  add_crate_options(*summary_cmd, crate);
  summary_cmd->add_option("--depth", summary_depth,
                          "Show modules down to this depth (default: all)");
  summary_cmd->add_option("--dtype", summary_dtype,
                          "Size the parameters at this dtype (default: config.json torch_dtype, "
                          "else F32)");
  summary_cmd->add_option("--output,-o", out.output, "Write the table here instead of stdout");
  summary_cmd->footer(
      "Example: candle-graph summary examples/tiny-llama --config examples/tiny-llama/config.json");

  query::QueryRequest qreq;
  std::string kinds_list;
  for (const auto& spec : query_kinds())
    kinds_list += (kinds_list.empty() ? "" : ", ") + spec.kind;
  auto* query_cmd = app.add_subcommand(
      "query", "Answer one bounded query as a candle-graph/query/1 JSON envelope (kinds: " +
                   kinds_list + ")");
  query_cmd->add_option("kind", qreq.kind, "What to list: " + kinds_list)->required();
  query_cmd->add_option("selector", qreq.selector,
                        "Exact id, then exact name, then case-insensitive substring");
  add_crate_options(*query_cmd, crate, false);
  query_cmd->add_option("--path", crate.path, "Crate directory or Cargo.toml (default: .)");
  query_cmd->add_option("--to", qreq.to, "path: the operation or tensor to reach");
  query_cmd->add_option("--limit", qreq.limit, "Most records to return (default 100)")
      ->check(CLI::PositiveNumber);
  query_cmd->add_option("--offset", qreq.offset, "Records to skip (default 0)");
  query_cmd->add_option("--output,-o", out.output, "Write the envelope here instead of stdout");
  query_cmd->add_option("--format", out.format, "json (default) or tree (one line per item)")
      ->check(CLI::IsMember({"json", "tree"}));
  add_evidence_options(*query_cmd, evidence);
  query_cmd->footer(
      "Example: candle-graph query parameters embed --path examples/tiny-llama --limit 5");

  auto* mcp_cmd = app.add_subcommand(
      "mcp", "Serve the query kinds as MCP tools over stdio (JSON-RPC 2.0, one message a line)");
  add_crate_options(*mcp_cmd, crate, false);
  mcp_cmd->add_option("--path", crate.path, "Crate directory or Cargo.toml (default: .)");
  add_evidence_options(*mcp_cmd, evidence);
  mcp_cmd->footer("Example: candle-graph mcp --path examples/tiny-llama");

  std::string chrome_out;
  auto* export_cmd = app.add_subcommand(
      "export", "Export a runtime/4 trace as Chrome Trace Event JSON (opens in Perfetto)");
  export_cmd->add_option("--chrome", chrome_out, "Output file")->required();
  export_cmd->add_option("--runtime-trace", evidence.runtime_traces, "runtime/4 trace")
      ->required()
      ->expected(1);
  export_cmd->add_flag("--lenient", evidence.lenient, "Skip bad lines and count them");
  export_cmd->footer("Example: candle-graph export --chrome trace.json --runtime-trace run.jsonl");

  try {
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (app.get_subcommands().empty()) {
      std::cout << app.help();
      return kExitOk;
    }
    if (export_cmd->parsed()) {
      runtime::ReadOptions ro;
      ro.lenient = evidence.lenient;
      auto r = runtime::export_chrome_trace(evidence.runtime_traces.front(), chrome_out, ro);
      std::cerr << "wrote " << chrome_out << ": " << r.events << " events on " << r.threads
                << " threads";
      if (r.trace.skipped_lines > 0)
        std::cerr << " (" << r.trace.skipped_lines << " bad lines skipped)";
      std::cerr << "\n";
      return kExitOk;
    }
    // An unknown kind is a usage error before any analysis work.
    if (query_cmd->parsed()) qreq.kind = canonical_kind(qreq.kind);
    Analysis a = analyze(crate, evidence);
    if (check->parsed() || report->parsed()) {
      write_or_print(out.output, out.format == "tree" ? render_tree(a) : ir::write_model_ir(a.ir));
      emit_diagnostics(a, out);
      int b = baselines(a, out);
      int g = gate(a, out, check->parsed() || out.strict);
      // --checkpoint: the verdict goes to stderr and a checkpoint that will not load fails the
      // gate like a proven error finding (check always, report with --strict).
      if (!evidence.checkpoint.empty()) {
        checkpoint::VerifyOptions vopt;
        vopt.prefix = evidence.prefix;
        const auto rep = checkpoint::verify(checkpoint::inventory_from_ir(a.ir),
                                            checkpoint::load_checkpoint(evidence.checkpoint), vopt);
        std::cerr << checkpoint::report_text(rep, 5);
        if (!rep.will_load && (check->parsed() || out.strict)) g = kExitGate;
      }
      return g != kExitOk ? g : b;
    }
    if (query_cmd->parsed() || mcp_cmd->parsed()) {
      QueryContext qctx;
      qctx.config_path = crate.config;
      if (!evidence.checkpoint.empty()) {
        auto ckpt = checkpoint::load_checkpoint(evidence.checkpoint);
        checkpoint::VerifyOptions vopt;
        vopt.prefix = evidence.prefix;
        qctx.checkpoint_report = checkpoint::report_json(
            checkpoint::verify(checkpoint::inventory_from_ir(a.ir), ckpt, vopt));
      }
      if (mcp_cmd->parsed()) {
        query::McpServer server(
            query_kinds(),
            [&](const query::QueryRequest& r) {
              query::QueryRequest c = r;
              c.kind = canonical_kind(r.kind);
              return answer_query(a, c, qctx);
            },
            kVersion);
        server.serve(std::cin, std::cout);
        return kExitOk;
      }
      qreq.kind = canonical_kind(qreq.kind);
      write_or_print(out.output, out.format == "tree" ? answer_query_tree(a, qreq, qctx)
                                                      : answer_query(a, qreq, qctx));
      return kExitOk;
    }
    if (summary_cmd->parsed()) {
      write_or_print(out.output,
                     render_model_summary(a, crate.config, summary_dtype, summary_depth));
      return kExitOk;
    }
    if (profile->parsed()) {
      JsonWriter w(2);
      w.begin_object()
          .field("schema", "candle-graph/query/1")
          .field("analysis_id", a.ir.analysis_id);
      w.field("kind", "profile").key("traces").begin_array();
      for (const auto& t : a.traces)
        runtime::write_trace_info(w, t);
      w.end_array().key("report");
      runtime::write_profile_report(w, runtime::profile_report(a.ir), 50);
      w.end_object();
      write_or_print(out.output, w.take() + "\n");
      emit_diagnostics(a, out);
      return kExitOk;
    }
    if (verify_cmd->parsed()) {
      auto ckpt = checkpoint::load_checkpoint(evidence.checkpoint);
      checkpoint::VerifyOptions vopt;
      vopt.prefix = evidence.prefix;
      auto rep = checkpoint::verify(checkpoint::inventory_from_ir(a.ir), ckpt, vopt);
      std::cout << checkpoint::report_text(rep);
      if (!out.output.empty()) write_file_atomic(out.output, checkpoint::report_json(rep));
      return rep.will_load ? kExitOk : kExitGate;
    }
    viewer::ViewerOptions vo;
    vo.title = a.package_id;
    // With --checkpoint, the page's checkpoint view shows the verification (and audit keeps the
    // report beside the page).
    std::optional<checkpoint::VerifyReport> ck_report;
    std::optional<viewer::CheckpointView> ck_view;
    if (!evidence.checkpoint.empty() && (view->parsed() || audit->parsed())) {
      const auto ckpt = checkpoint::load_checkpoint(evidence.checkpoint);
      checkpoint::VerifyOptions vopt;
      vopt.prefix = evidence.prefix;
      ck_report = checkpoint::verify(checkpoint::inventory_from_ir(a.ir), ckpt, vopt);
      ck_view = checkpoint_view(*ck_report, ckpt, a.ir);
    }
    const viewer::CheckpointView* ck = ck_view ? &*ck_view : nullptr;
    if (view->parsed()) {
      std::string path = out.output.empty() ? "model.html" : out.output;
      write_file_atomic(path, viewer::render_viewer_html(a.ir, vo, ck));
      std::cerr << "wrote " << path << "\n";
      return kExitOk;
    }
    if (audit->parsed()) {
      std::filesystem::path dir(audit_dir);
      std::string summary = render_summary(a);
      write_file_atomic(dir / "summary.txt", summary);
      write_file_atomic(dir / "model.json", ir::write_model_ir(a.ir));
      auto diags = diagnostics_of(a.ir);
      write_file_atomic(dir / "findings.txt", render_human(diags, false));
      write_file_atomic(dir / "findings.sarif", render_sarif(diags, kVersion));
      write_file_atomic(dir / "model.html", viewer::render_viewer_html(a.ir, vo, ck));
      write_file_atomic(dir / "model-summary.txt", render_model_summary(a, crate.config, ""));
      if (ck_report) {
        write_file_atomic(dir / "checkpoint.txt", checkpoint::report_text(*ck_report));
        write_file_atomic(dir / "checkpoint.json", checkpoint::report_json(*ck_report));
      }
      std::cout << summary;
      std::cout << "wrote " << (dir / "summary.txt").string() << ", model-summary.txt, model.json, "
                << "findings.txt, findings.sarif, model.html"
                << (ck_report ? ", checkpoint.txt, checkpoint.json" : "") << "\n";
      int b = baselines(a, out);
      int g = gate(a, out, out.strict);
      return g != kExitOk ? g : b;
    }
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace cg::cli
