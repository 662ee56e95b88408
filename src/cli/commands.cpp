#include "cli/commands.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "checkpoint/checkpoint_source.hpp"
#include "checkpoint/ir_adapter.hpp"
#include "checkpoint/verify.hpp"
#include "cli/baseline.hpp"
#include "cli/checkpoint_view.hpp"
#include "cli/diagnostics.hpp"
#include "cli/output.hpp"
#include "cli/profile_text.hpp"
#include "cli/summary_text.hpp"
#include "instrument/instrument.hpp"
#include "pipeline/config_check.hpp"
#include "pipeline/pipeline.hpp"
#include "query/mcp.hpp"
#include "query/memory.hpp"
#include "query/query.hpp"
#include "query/summary_rows.hpp"
#include "runtime/chrome_export.hpp"
#include "runtime/merge_ir.hpp"
#include "runtime/report_json.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"
#include "util/text.hpp"
#include "viewer/payload.hpp"

namespace cg::cli {

namespace {

namespace fs = std::filesystem;
using pipeline::Analysis;

// ---- shared steps ---------------------------------------------------------------------------

// The files a command reads, by the flag that named them.
std::vector<NamedInput> inputs_of(const Args& args) {
  std::vector<NamedInput> in;
  std::error_code ec;
  const fs::path crate(args.crate.path);
  in.push_back(
      {"crate manifest", (fs::is_directory(crate, ec) ? crate / "Cargo.toml" : crate).string()});
  in.push_back({"--config", args.crate.config});
  for (const auto& t : args.crate.runtime_traces)
    in.push_back({"--runtime-trace", t});
  in.push_back({"--check", args.out.check_baseline});
  const fs::path ckpt(args.evidence.checkpoint);
  if (ckpt.empty()) return in;
  in.push_back({"--checkpoint", ckpt.string()});
  // A checkpoint directory or an index reads the files beside it: shards and index.
  const bool is_dir = fs::is_directory(ckpt, ec);
  if (!is_dir && !ckpt.filename().string().ends_with(".index.json")) return in;
  fs::path dir = is_dir ? ckpt : ckpt.parent_path();
  if (dir.empty()) dir = ".";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string ext = it->path().extension().string();
    if (ext == ".safetensors" || ext == ".json")
      in.push_back({"--checkpoint", it->path().string()});
  }
  return in;
}

// Analyzes the crate; first refuses, before any work, to write an output that is an input.
Analysis analyze(const Args& args, const std::vector<std::string>& outputs) {
  const auto inputs = inputs_of(args);
  for (const auto& o : outputs)
    refuse_overwriting_inputs(o, inputs);
  // --prefix also places traced module scope paths under the root constructor.
  pipeline::Options crate = args.crate;
  if (crate.module_prefix.empty()) crate.module_prefix = args.evidence.prefix;
  return pipeline::analyze(crate);
}

// --checkpoint verified against the analysis's parameter inventory (nothing without the flag).
struct Verified {
  checkpoint::Checkpoint checkpoint;
  checkpoint::VerifyReport report;
};

std::optional<Verified> verify_checkpoint(const Analysis& a, const EvidenceOptions& evidence) {
  if (evidence.checkpoint.empty()) return std::nullopt;
  Verified v;
  v.checkpoint = checkpoint::load_checkpoint(evidence.checkpoint);
  checkpoint::VerifyOptions opts;
  opts.prefix = evidence.prefix;
  v.report = checkpoint::verify(checkpoint::inventory_from_ir(a.ir), v.checkpoint, opts);
  return v;
}

RenderContext render_context(const Analysis& a, bool color) {
  return {a.package_id, a.manifest_path, kVersion, color};
}

// Diagnostics go to stderr in the chosen format; the gate is applied after every output is
// written.
void emit_diagnostics(const Analysis& a, const OutputOptions& out) {
  std::cerr << render_diagnostics(a.ir, out.message_format, render_context(a, ::isatty(2) != 0));
}

// The findings that change what a command prints (a source file skipped or cut short, rules that
// do not apply to this Candle version), on stderr for the commands that do not print every
// finding: `summary` of a crate whose lib.rs was skipped must not say "Total params: 0" silently.
void warn_incomplete_inputs(const Analysis& a) {
  static const std::set<std::string> kRules = {"source-load", "syntax-error", "parse-depth",
                                               "path-cycle", "candle-semantics-version"};
  constexpr std::size_t kShown = 8;
  std::size_t n = 0;
  for (const auto& f : a.ir.findings) {
    if (!kRules.count(f.rule)) continue;
    if (n++ < kShown)
      std::cerr << "warning: " << (f.source ? shown_text(*f.source, 200) + ": " : "")
                << shown_text(f.message, 400) << "\n";
  }
  if (n > kShown)
    std::cerr << "warning: ... and " << (n - kShown)
              << " more such warnings (candle-graph check lists every finding)\n";
}

// A trace that was read but not merged (its identity is another build's) is said out loud; when
// traces were given and none could be merged, the timings the user asked for are missing: exit 2
// (the other outputs are still written).
int warn_rejected_traces(const Analysis& a) {
  for (const auto& path : a.rejected_traces)
    std::cerr << "warning: runtime trace " << path
              << " was not merged (identity mismatch: see the runtime-identity finding); no "
                 "timings from it are shown\n";
  if (a.traces.empty() || a.rejected_traces.size() != a.traces.size()) return kExitOk;
  std::cerr << "error: no runtime trace was merged (identity mismatch: see the "
               "runtime-identity findings); the output has no timings\n";
  return kExitUsage;
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

query::QueryContext query_context(const Analysis& a, const Args& args) {
  query::QueryContext ctx;
  ctx.config_path = args.crate.config;
  ctx.crate_path = args.crate.path;
  if (auto v = verify_checkpoint(a, args.evidence))
    ctx.checkpoint_report = checkpoint::report_json(v->report);
  return ctx;
}

// What the summary says of each module row (the inspector shows `query module`'s fields), with
// the weights stated at config.json's torch_dtype, else F32, as `summary` does.
viewer::ModuleFiguresById viewer_figures(const Analysis& a, const std::string& config_path) {
  const std::string dtype = query::summary_dtype("", config_path);
  const query::SummaryModel sm = query::build_summary(a.ir, dtype);
  const std::uint64_t width = query::dtype_bytes(dtype);
  viewer::ModuleFiguresById out;
  std::uint64_t order = 0;
  for (const auto& r : sm.rows) {
    if (r.module_id.empty()) continue;
    viewer::ModuleFigures f;
    f.order = order++;
    f.output_shape = r.output_shape;
    f.mult_adds = r.mult_adds;
    if (f.mult_adds.rfind("≥ ", 0) == 0) f.mult_adds = f.mult_adds.substr(std::string("≥ ").size());
    f.mult_adds_lower_bound = r.mult_adds_lower_bound;
    f.parameter_count = r.params;
    if (r.params && width > 0 && *r.params <= UINT64_MAX / width)
      f.weights_bytes = *r.params * width;
    f.weights_dtype = dtype;
    f.shared_weights = r.marker.find("shared with") != std::string::npos;
    out.emplace(r.module_id, std::move(f));
  }
  return out;
}

// `memory`'s report at the config's context (max_position_embeddings), batch 1, for the viewer's
// model properties and its per-layer state; none when no report can be made (no context known,
// several models, no forward): the page then says nothing of memory rather than guess.
std::optional<viewer::MemoryView> viewer_memory(const Analysis& a, const std::string& config_path) {
  if (config_path.empty()) return std::nullopt;
  query::MemoryReport r;
  try {
    r = query::build_memory(a, config_path, {});
  } catch (const InputError&) {
    return std::nullopt;
  }
  viewer::MemoryView m;
  m.dtype = r.dtype;
  m.batch = r.batch;
  m.context = r.context;
  m.context_source = r.context_source;
  const std::pair<const char*, const query::MemoryFigure*> figures[] = {
      {"weights", &r.weights},
      {"kv_cache", &r.kv_cache},
      {"state", &r.state},
      {"buffers", &r.buffers},
      {"activations", &r.activations},
      {"inference_total", &r.inference},
      {"training_total", &r.training}};
  for (const auto& [name, f] : figures)
    m.figures.push_back({name, f->bytes, query::to_string(f->bound), f->note});
  for (const auto& s : r.states)
    m.states.push_back({s.instance, s.place, s.source, s.instances, s.per_instance.bytes,
                        s.total.bytes, query::to_string(s.per_instance.bound), s.shapes, s.grows});
  for (const auto& b : r.buffer_rows)
    m.states.push_back({b.instance,
                        b.owner,
                        b.source,
                        b.instances,
                        b.per_instance.bytes,
                        b.total.bytes,
                        query::to_string(b.per_instance.bound),
                        {b.shape + " " + b.dtype},
                        false,
                        true});
  m.notes = r.notes;
  return m;
}

// The viewer page, with the checkpoint view when --checkpoint was verified.
std::string viewer_page(const Analysis& a, const std::optional<Verified>& v,
                        const std::string& config_path) {
  std::optional<viewer::CheckpointView> ck;
  if (v) ck = checkpoint_view(v->report, v->checkpoint, a.ir);
  viewer::ViewerOptions vo;
  vo.title = a.package_id;
  const viewer::ModuleFiguresById figures = viewer_figures(a, config_path);
  const std::optional<viewer::MemoryView> memory = viewer_memory(a, config_path);
  return viewer::render_viewer_html(a.ir, vo, ck ? &*ck : nullptr, &figures,
                                    memory ? &*memory : nullptr);
}

// ---- the commands ---------------------------------------------------------------------------

void analysis_flags(CLI::App& cmd, Args& args) {
  add_crate_options(cmd, args.crate);
  add_evidence_options(cmd, args.crate, args.evidence);
  add_output_options(cmd, args.out, true);
}

// check and report: the IR (or the tree) to stdout/-o, diagnostics to stderr, then the gates.
int check_or_report(Args& args, bool is_check) {
  const OutputOptions& out = args.out;
  Analysis a = analyze(args, {out.output, out.update_baseline});
  write_or_print(out.output, out.format == "tree" ? render_summary(a) : ir::write_model_ir(a.ir));
  emit_diagnostics(a, out);
  const int traces = warn_rejected_traces(a);
  int b = baselines(a, out);
  int g = gate(a, out, is_check || out.strict);
  // --checkpoint: the verdict goes to stderr and a checkpoint that will not load fails the gate
  // like a proven error finding (check always, report with --strict).
  if (auto v = verify_checkpoint(a, args.evidence)) {
    std::cerr << checkpoint::report_text(v->report, 5);
    if (!v->report.will_load && (is_check || out.strict)) g = kExitGate;
  }
  if (traces != kExitOk) return traces;
  return g != kExitOk ? g : b;
}

int run_check(Args& args) {
  return check_or_report(args, true);
}

int run_report(Args& args) {
  return check_or_report(args, false);
}

void audit_flags(CLI::App& cmd, Args& args) {
  cmd.add_option("dir", args.audit_dir, "Output directory")->required();
  add_crate_options(cmd, args.crate);
  add_evidence_options(cmd, args.crate, args.evidence);
  add_output_options(cmd, args.out, false);
}

int run_audit(Args& args) {
  const fs::path dir(args.audit_dir);
  const char* files[] = {"summary.txt", "model.json",        "findings.txt",   "findings.sarif",
                         "model.html",  "model-summary.txt", "checkpoint.txt", "checkpoint.json"};
  std::vector<std::string> outputs = {args.out.update_baseline};
  for (const char* f : files)
    outputs.push_back((dir / f).string());
  Analysis a = analyze(args, outputs);
  auto v = verify_checkpoint(a, args.evidence);
  std::string summary = render_summary(a);
  // All or nothing: a full disk half-way leaves the previous bundle whole, never a mix.
  AtomicDirectory bundle(dir);
  bundle.add("summary.txt", summary);
  bundle.add("model.json", ir::write_model_ir(a.ir));
  bundle.add("findings.txt", render_diagnostics(a.ir, "human", render_context(a, false)));
  bundle.add("findings.sarif", render_diagnostics(a.ir, "sarif", render_context(a, false)));
  bundle.add("model.html", viewer_page(a, v, args.crate.config));
  bundle.add("model-summary.txt", query::render_model_summary(a, args.crate.config));
  if (v) {
    bundle.add("checkpoint.txt", checkpoint::report_text(v->report));
    bundle.add("checkpoint.json", checkpoint::report_json(v->report));
  }
  bundle.commit();
  std::cout << summary;
  std::cout << "wrote " << (dir / "summary.txt").string() << ", model-summary.txt, model.json, "
            << "findings.txt, findings.sarif, model.html"
            << (v ? ", checkpoint.txt, checkpoint.json" : "") << "\n";
  warn_incomplete_inputs(a);
  const int traces = warn_rejected_traces(a);
  int b = baselines(a, args.out);
  int g = gate(a, args.out, args.out.strict);
  if (traces != kExitOk) return traces;
  return g != kExitOk ? g : b;
}

void view_flags(CLI::App& cmd, Args& args) {
  add_crate_options(cmd, args.crate);
  add_evidence_options(cmd, args.crate, args.evidence);
  cmd.add_option("--output,-o", args.out.output, "HTML file to write (default: model.html)");
}

int run_view(Args& args) {
  const std::string path = args.out.output.empty() ? "model.html" : args.out.output;
  Analysis a = analyze(args, {path});
  // With --checkpoint, the page's checkpoint view shows the verification.
  write_file_atomic(path, viewer_page(a, verify_checkpoint(a, args.evidence), args.crate.config));
  std::cerr << "wrote " << path << "\n";
  warn_incomplete_inputs(a);
  return warn_rejected_traces(a);
}

// --runtime-trace (required) and --lenient, for the commands that read traces.
CLI::Option* trace_flags(CLI::App& cmd, Args& args, const std::string& trace_help,
                         const std::string& lenient_help) {
  CLI::Option* trace =
      cmd.add_option("--runtime-trace", args.crate.runtime_traces, trace_help)->required();
  cmd.add_flag("--lenient", args.crate.lenient, lenient_help);
  return trace;
}

void profile_flags(CLI::App& cmd, Args& args) {
  add_crate_options(cmd, args.crate);
  trace_flags(cmd, args, "Runtime trace to merge (repeat for several runs or ranks)",
              "Skip bad trace lines and count them");
  cmd.add_option("--prefix", args.crate.module_prefix,
                 "Prefix the program pushes before the root constructor (module scope paths)");
  cmd.add_option("--sort", args.profile_sort, "Order rows by self (exclusive) or total time")
      ->check(CLI::IsMember({"self", "total"}));
  cmd.add_option("--format", args.profile_format, "json (default) or table")
      ->check(CLI::IsMember({"json", "table"}));
  cmd.add_option("--limit", args.profile_limit, "Rows per table (0 = all; default 50)");
  cmd.add_option("--output,-o", args.out.output, "Write the report here instead of stdout");
}

int run_profile(Args& args) {
  Analysis a = analyze(args, {args.out.output});
  // Wall time: each merged trace's real span (its threads' union), summed over the traces.
  std::uint64_t span = 0;
  for (const auto& t : a.traces)
    if (std::find(a.rejected_traces.begin(), a.rejected_traces.end(), t.path) ==
        a.rejected_traces.end())
      span = span > ~std::uint64_t{0} - t.span_ns ? ~std::uint64_t{0} : span + t.span_ns;
  const auto report = runtime::profile_report(a.ir, args.profile_sort == "self", span);
  if (args.profile_format == "table") {
    write_or_print(args.out.output, profile_table(report, a.traces.size(), args.profile_limit));
  } else {
    JsonWriter w(2);
    w.begin_object().field("schema", "candle-graph/query/1");
    w.field("analysis_id", a.ir.analysis_id);
    w.field("kind", "profile").key("traces").begin_array();
    for (const auto& t : a.traces)
      runtime::write_trace_info(w, t);
    w.end_array().key("report");
    runtime::write_profile_report(w, report, args.profile_limit);
    w.end_object();
    write_or_print(args.out.output, w.take() + "\n");
    if (report.host_side && report.has_module_scopes) {
      std::cerr << "note: timings are host-side (the traces have no device_sync)\n";
    }
  }
  emit_diagnostics(a, args.out);
  return warn_rejected_traces(a);
}

void verify_flags(CLI::App& cmd, Args& args) {
  add_crate_options(cmd, args.crate);
  cmd.add_option("--checkpoint", args.evidence.checkpoint,
                 "safetensors file, *.index.json or checkpoint directory")
      ->required();
  cmd.add_option("--prefix", args.evidence.prefix,
                 "Prefix a caller pushes before the root constructor");
  cmd.add_option("--output,-o", args.out.output, "Write the JSON report here");
}

int run_verify(Args& args) {
  Analysis a = analyze(args, {args.out.output});
  warn_incomplete_inputs(a);
  auto v = verify_checkpoint(a, args.evidence);
  // What the bound config left unbound makes the expected shapes partial: said before the verdict.
  if (!args.crate.config.empty()) std::cerr << pipeline::config_warning_lines(a.ir);
  std::cout << checkpoint::report_text(v->report);
  if (!args.out.output.empty())
    write_file_atomic(args.out.output, checkpoint::report_json(v->report));
  return v->report.will_load ? kExitOk : kExitGate;
}

void summary_flags(CLI::App& cmd, Args& args) {
  add_crate_options(cmd, args.crate);
  cmd.add_option("--depth", args.summary_depth, "Show modules down to this depth (default: all)");
  cmd.add_option("--dtype", args.summary_dtype,
                 "Size the parameters at this dtype (default: config.json torch_dtype, else F32)");
  cmd.add_option("--input-shape", args.input_shape,
                 "Sizes of the input's symbolic dimensions, e.g. b=1,t=2048: Mult-Adds become "
                 "numbers; or a tensor input's whole shape, e.g. xs=1x3x224x224 (for a root "
                 "without a forward, a child's by its key path: model.encoder.x=1x80x3000)");
  cmd.add_option("--runtime-trace", args.crate.runtime_traces,
                 "runtime/4 trace with module scopes: adds Time, Self, % and Calls per module "
                 "(repeat for several runs or ranks)");
  cmd.add_flag("--lenient", args.crate.lenient, "Skip bad trace lines and count them");
  cmd.add_option("--prefix", args.crate.module_prefix,
                 "Prefix the program pushes before the root constructor (module scope paths)");
  cmd.add_flag("--weights", args.summary_weights,
               "Add a row per weight under each layer, with its shape (Param shape column)");
  cmd.add_flag("--all-columns", args.summary_all_columns,
               "Show Mult-Adds and Trainable even where every row is unknown (\"?\")");
  cmd.add_option("--width", args.summary_width,
                 "Wrap long names, shapes and notes to this many columns (default 120; 0: no "
                 "limit)");
  cmd.add_flag("--stats", args.summary_stats,
               "With --runtime-trace: add Abs max, RMS and Non-finite columns from the trace's "
               "runtime/4 stats records (module outputs)");
  cmd.add_option("--output,-o", args.out.output, "Write the table here instead of stdout");
}

int run_summary(Args& args) {
  // Bad flags are refused before the analysis runs.
  query::SummaryOptions opts{
      args.summary_dtype,   args.summary_depth,       query::parse_input_shape(args.input_shape),
      args.summary_weights, args.summary_all_columns, args.summary_width,
      "--weights",          "--all-columns",          "pass --config config.json",
      args.summary_stats};
  args.crate.input_tensors = query::parse_input_tensors(args.input_shape);
  Analysis a = analyze(args, {args.out.output});
  opts.quantized = query::quantized_root(a, args.crate.path);
  write_or_print(args.out.output, query::render_model_summary(a, args.crate.config, opts));
  warn_incomplete_inputs(a);
  return warn_rejected_traces(a);
}

void memory_flags(CLI::App& cmd, Args& args) {
  add_crate_options(cmd, args.crate);
  cmd.add_option("--context", args.memory_context,
                 "Positions the KV cache holds (default: config.json max_position_embeddings)");
  cmd.add_option("--batch", args.memory_batch, "Sequences at once (default 1)");
  cmd.add_option("--dtype", args.summary_dtype,
                 "Weights and state at this dtype (default: config.json torch_dtype, else F32)");
  cmd.add_option("--gguf", args.memory_gguf,
                 "Weights from this GGUF file's tensors at their block formats (exact), checked "
                 "against the model's parameters; with a root built from gguf_file::Content, the "
                 "weights alone");
  cmd.add_option("--quant", args.memory_quant,
                 "Weights of rank >= 2 at this GGML type (q4_0, q8_0, q4_k, q6_k, ...), rank-1 "
                 "tensors at F32");
  cmd.add_option("--device-memory", args.memory_device,
                 "Say whether it fits a device of this size (24GiB, 80GB, 16000MiB) and the "
                 "largest context and batch that can");
  cmd.add_option("--input-shape", args.input_shape,
                 "Sizes of other input dimensions (h=224,w=224), or an input's whole shape "
                 "(xa=1x1500x384: an encoder output a decoder caches)");
  cmd.add_flag("--master-fp32", args.memory_master_fp32,
               "Training keeps an fp32 master copy of 16-bit weights (4 bytes a parameter)");
  args.out.format = "text";
  cmd.add_option("--format", args.out.format, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd.add_option("--output,-o", args.out.output, "Write the report here instead of stdout");
}

// A positive count given to `flag`: "-4", "lots", "0" and a number past 2^64 are input errors.
std::uint64_t positive_count(const std::string& flag, const std::string& text) {
  const bool ok = !text.empty() && text.size() <= 19 &&
                  text.find_first_not_of("0123456789") == std::string::npos;
  const std::uint64_t v = ok ? std::stoull(text) : 0;
  if (!ok || v == 0)
    throw cg::InputError(flag + " " + text, "not a positive whole number (e.g. " + flag + " 4096)");
  return v;
}

// Why the root named by --root is one built from a GGUF file's content: its module's file
// (`models::quantized_llama::ModelWeights` -> src/models/quantized_llama.rs or
// src/models/quantized_llama/mod.rs) declares the struct and reads a `gguf_file::Content`. ""
// when it is not (a misspelt root stays the analysis's error).
std::string gguf_content_root(const Args& args, const std::string& error) {
  const std::string& root = args.crate.root;
  if (root.empty() || error.find("constructor taking a VarBuilder") == std::string::npos) return {};
  std::vector<std::string> segs;
  for (std::size_t a = 0, b; a <= root.size(); a = b + 2) {
    b = root.find("::", a);
    if (b == std::string::npos) b = root.size();
    segs.push_back(root.substr(a, b - a));
  }
  if (segs.size() < 2) return {};
  const std::string type = segs.back();
  segs.pop_back();
  // The path with or without the crate's own name first.
  for (std::size_t skip = 0; skip < 2 && skip < segs.size(); ++skip) {
    std::string rel = "src";
    for (std::size_t i = skip; i < segs.size(); ++i)
      rel += "/" + segs[i];
    for (const std::string& file : {rel + ".rs", rel + "/mod.rs"}) {
      const std::string text = query::crate_file_text(args.crate.path, file);
      if (text.find("struct " + type) != std::string::npos &&
          text.find("gguf_file::Content") != std::string::npos)
        return "`" + root + "` (" + file +
               ") is built from a GGUF file's content (gguf_file::Content), not a VarBuilder: "
               "the analysis does not build it, so its KV cache and state are not read";
    }
  }
  return {};
}

int run_memory(Args& args) {
  // Bad flags are refused before the analysis runs.
  query::MemoryOptions opts;
  opts.dtype = args.summary_dtype;
  if (!args.memory_context.empty()) opts.context = positive_count("--context", args.memory_context);
  opts.batch = positive_count("--batch", args.memory_batch);
  if (!args.memory_device.empty()) opts.device_bytes = query::parse_memory_size(args.memory_device);
  opts.dims = query::parse_input_shape(args.input_shape);
  opts.master_fp32 = args.memory_master_fp32;
  if (!args.memory_gguf.empty() && !args.memory_quant.empty())
    throw cg::InputError("--quant " + args.memory_quant,
                         "give --gguf (the file's own types) or --quant, not both");
  if (!args.memory_quant.empty()) opts.quant = query::parse_quant_type(args.memory_quant);
  if (!args.memory_gguf.empty()) opts.gguf = checkpoint::read_gguf_header(args.memory_gguf);
  args.crate.input_tensors = query::parse_input_tensors(args.input_shape);
  std::optional<Analysis> a;
  try {
    a = analyze(args, {args.out.output});
  } catch (const cg::InputError& e) {
    // A root built from `gguf_file::Content` (quantized_llama's `ModelWeights::from_gguf`) takes
    // no VarBuilder: the analysis does not build it, but the file still says what its weights
    // take.
    const std::string why = gguf_content_root(args, e.what());
    if (why.empty()) throw;
    if (!opts.gguf)
      throw cg::InputError("--root " + args.crate.root,
                           why + "; give --gguf FILE to read its weights from the file");
    const query::MemoryReport r = query::memory_from_gguf(args.crate.root, opts, why);
    write_or_print(args.out.output, args.out.format == "json" ? query::render_memory_json(r)
                                                              : query::render_memory_text(r));
    return 0;
  }
  opts.quantized_builder = query::quantized_root(*a, args.crate.path);
  if (opts.quantized_builder || opts.gguf || opts.quant)
    opts.dequantized = query::dequantized_parameters(*a, args.crate.path);
  const query::MemoryReport r = query::build_memory(*a, args.crate.config, opts);
  write_or_print(args.out.output, args.out.format == "json" ? query::render_memory_json(r)
                                                            : query::render_memory_text(r));
  warn_incomplete_inputs(*a);
  return 0;
}

std::string kinds_list() {
  std::string kinds;
  for (const auto& spec : query::query_kinds())
    kinds += (kinds.empty() ? "" : ", ") + spec.kind;
  return kinds;
}

// A count that cannot be negative: `--offset -1` would wrap to a huge number.
CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& v) {
        return v.find('-') == std::string::npos ? std::string() : "must be 0 or more, not " + v;
      },
      "N>=0");
}

void query_flags(CLI::App& cmd, Args& args) {
  query::QueryRequest& q = args.query;
  cmd.add_option("kind", q.kind, "What to list: " + kinds_list())->required();
  cmd.add_option("selector", q.selector,
                 "Exact id, then exact name, then case-insensitive substring");
  add_crate_options(cmd, args.crate, false);
  cmd.add_option("--path", args.crate.path, "Crate directory or Cargo.toml (default: .)");
  cmd.add_option("--to", q.to, "path: the operation or tensor to reach");
  cmd.add_option("--limit", q.limit, "Most records to return (default 100)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--offset", q.offset, "Records to skip (default 0)")->check(non_negative());
  cmd.add_option("--output,-o", args.out.output, "Write the envelope here instead of stdout");
  cmd.add_option("--format", args.out.format, "json (default) or tree (one line per item)")
      ->check(CLI::IsMember({"json", "tree"}));
  add_evidence_options(cmd, args.crate, args.evidence);
}

int run_query(Args& args) {
  // An unknown kind is a usage error before any analysis work.
  args.query.kind = query::canonical_kind(args.query.kind);
  Analysis a = analyze(args, {args.out.output});
  const query::QueryContext ctx = query_context(a, args);
  write_or_print(args.out.output, args.out.format == "tree"
                                      ? query::answer_query_tree(a, args.query, ctx)
                                      : query::answer_query(a, args.query, ctx));
  warn_incomplete_inputs(a);
  return warn_rejected_traces(a);
}

void mcp_flags(CLI::App& cmd, Args& args) {
  add_crate_options(cmd, args.crate, false);
  cmd.add_option("--path", args.crate.path, "Crate directory or Cargo.toml (default: .)");
  add_evidence_options(cmd, args.crate, args.evidence);
}

// The server answers `initialize` and `tools/list` at once and analyses on the first tool call
// that needs it: each call may name its own `root` and `config` (else the session's flags), and
// each such analysis is kept for the calls after it.
int run_mcp(Args& args) {
  struct Cached {
    Analysis analysis;
    query::QueryContext ctx;
  };
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Cached>> cache;
  constexpr std::size_t kCached = 8;  // analyses kept; the oldest key goes first past it
  std::vector<std::pair<std::string, std::string>> order;
  auto answer = [&](const query::QueryRequest& r) {
    Args call = args;
    if (!r.root.empty()) call.crate.root = r.root;
    if (!r.config.empty()) call.crate.config = r.config;
    const auto key = std::make_pair(call.crate.root, call.crate.config);
    auto it = cache.find(key);
    if (it == cache.end()) {
      auto c = std::make_unique<Cached>();
      c->analysis = analyze(call, {});
      c->ctx = query_context(c->analysis, call);
      c->ctx.mcp = true;
      if (order.size() == kCached) {
        cache.erase(order.front());
        order.erase(order.begin());
      }
      order.push_back(key);
      it = cache.emplace(key, std::move(c)).first;
    }
    return query::answer_query(it->second->analysis, r, it->second->ctx);
  };
  query::McpServer server(query::mcp_tools(), answer, kVersion);
  server.serve(std::cin, std::cout);
  return kExitOk;
}

void export_flags(CLI::App& cmd, Args& args) {
  cmd.add_option("--chrome", args.chrome_out, "Output file")->required();
  trace_flags(cmd, args,
              "runtime/4 trace (repeat for several processes or ranks: one process track each)",
              "Skip bad lines and count them");
}

int run_export(Args& args) {
  std::vector<NamedInput> inputs;
  std::vector<std::filesystem::path> traces;
  for (const auto& t : args.crate.runtime_traces) {
    inputs.push_back({"--runtime-trace", t});
    traces.emplace_back(t);
  }
  refuse_overwriting_inputs(args.chrome_out, inputs);
  runtime::ReadOptions ro;
  ro.lenient = args.crate.lenient;
  auto r = runtime::export_chrome_traces(traces, args.chrome_out, ro);
  std::cerr << "wrote " << args.chrome_out << ": " << r.events << " events on " << r.threads
            << " threads";
  if (r.tracks.size() > 1) std::cerr << " of " << r.tracks.size() << " processes";
  std::uint64_t skipped = 0;
  for (const auto& t : r.tracks)
    skipped += t.trace.skipped_lines;
  if (skipped > 0) std::cerr << " (" << skipped << " bad lines skipped)";
  std::cerr << "\n";
  if (!r.aligned)
    std::cerr << "warning: not every trace has meta.start_unix_ns; each trace starts at 0, so the "
                 "processes are not on one timeline\n";
  // --lenient reads a damaged trace; it never hides that it was damaged.
  for (const auto& t : r.tracks) {
    const std::string& path = t.trace.path;
    if (t.trace.truncated)
      std::cerr << "warning: " << path
                << ": trace is truncated (no end record); the export covers what was written\n";
    for (const auto& what : runtime::end_record_findings(t.trace))
      std::cerr << "warning: " << path << ": " << what << "\n";
    if (t.trace.end_counts_disagree)
      std::cerr << "warning: " << path << ": the end record's counts ("
                << (t.trace.end ? t.trace.end->operations : 0)
                << " operations) disagree with the trace (" << t.trace.operations
                << "); the file was damaged\n";
  }
  return kExitOk;
}

void instrument_flags(CLI::App& cmd, Args& args) {
  add_crate_options(cmd, args.crate);
  cmd.add_option("--output,-o", args.out.output,
                 "Write the diff here (atomically) instead of stdout");
  cmd.add_option("--profile-dep", args.profile_dep,
                 "Source of the added candle-graph-profile dependency: path=DIR, git=URL or "
                 "version=REQ (default: path= this installation's bindings/rust/"
                 "candle-graph-profile when found, else version=0.3)");
  cmd.add_flag("--stats", args.stats,
               "Also record the statistics of each instrumented module's output (min, max, mean, "
               "RMS, abs-max, NaN/Inf/zero counts), computed on its device, behind the feature "
               "candle-graph-stats; schedule with CANDLE_GRAPH_STATS_EVERY=N / "
               "CANDLE_GRAPH_STATS_ON_NON_FINITE=1 (docs/instrument.md)");
}

// The diff to stdout (or -o), what was skipped and why to stderr. Nothing instrumented is an
// error, except when everything already is.
int run_instrument(Args& args) {
  refuse_overwriting_inputs(args.out.output, inputs_of(args));
  const instrument::Report r = instrument::instrument_crate(
      args.crate, args.profile_dep.empty() ? instrument::default_profile_dep() : args.profile_dep,
      args.stats);
  for (const auto& n : r.notes)
    std::cerr << "note: " << n << "\n";
  for (const auto& s : r.skipped)
    std::cerr << "skipped " << s.where << ": " << s.what << ": " << s.why << "\n";
  if (r.instrumented.empty()) {
    if (r.already_instrumented) {
      std::cerr << "nothing to do: the crate is already instrumented (module types with a `"
                << instrument::kFieldName << "` field are left alone)\n";
      return kExitOk;
    }
    std::cerr << "error: nothing to instrument: every module type was skipped (reasons above)\n";
    return kExitUsage;
  }
  write_or_print(args.out.output, r.diff);
  std::string names;
  for (const auto& t : r.instrumented)
    names += (names.empty() ? "" : ", ") + t;
  std::cerr << "instrumented " << r.instrumented.size() << " module type"
            << (r.instrumented.size() == 1 ? "" : "s") << " (" << names << "): " << r.fields
            << " fields, " << r.literals << " struct literals, " << r.captures
            << " constructor captures, " << r.scopes << " forward scopes, " << r.children
            << " child scopes in " << r.files.size()
            << " files, behind feature `candle-graph-profile`\n";
  if (args.stats)
    std::cerr << "statistics: " << r.stats_outputs << " forward outputs and " << r.stats_children
              << " child outputs, behind feature `candle-graph-stats` (a module `cg_stats` at the "
                 "end of the crate root; gradients: call cg_stats::grads(&varmap, &grads) after "
                 "backward)\n";
  if (!args.out.output.empty()) {
    const std::string abs = fs::absolute(args.out.output).lexically_normal().string();
    std::cerr << "wrote " << args.out.output
              << "; apply it in the crate directory with `patch -p1 < " << abs << "` or `git apply "
              << abs << "`\n";
  }
  return kExitOk;
}

// ---- compare --------------------------------------------------------------------------------

void compare_flags(CLI::App& cmd, Args& args) {
  CompareArgs& c = args.compare;
  cmd.add_option("--base", c.base, "Base trace(s): one file, or several runs of the base")
      ->required()
      ->expected(1, -1);
  cmd.add_option("--candidate", c.candidate,
                 "Candidate trace(s): one file, or several runs of the candidate")
      ->required()
      ->expected(1, -1);
  cmd.add_option("--confidence", c.options.confidence,
                 "Two-sided confidence of the interval, 0.5 to 0.9999 (default 0.95)")
      ->check(CLI::Range(0.5, 0.9999));
  cmd.add_option("--resamples", c.options.resamples, "Bootstrap resamples (default 2000)")
      ->check(CLI::Range(std::uint64_t{100}, std::uint64_t{1000000}));
  cmd.add_option("--seed", c.options.seed,
                 "Bootstrap seed (default " + std::to_string(compare::kDefaultSeed) + ")");
  cmd.add_option("--min-change", c.options.min_change_pct,
                 "Smallest change in percent that counts as slower/faster (default 1)")
      ->check(CLI::Range(0.0, 1e6));
  cmd.add_option("--fail-on-regression", c.fail_on_regression,
                 "Exit 1 when a row is slower by more than PCT percent")
      ->check(CLI::Range(0.0, 1e6));
  cmd.add_option("--format", c.format, "text (default), json or markdown")
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  cmd.add_option("--limit", c.limit, "Rows to list (0 = all; default 50)");
  cmd.add_option("--output,-o", args.out.output, "Write the report here (atomically)");
  cmd.add_flag("--lenient", c.options.lenient,
               "Read damaged or truncated traces (skipped lines are counted and stated)");
  cmd.add_flag("--allow-mismatch", c.options.allow_mismatch,
               "Compare traces whose meta (analysis_id, entrypoint, phase, schema) differ");
}

int run_compare(Args& args) {
  const CompareArgs& c = args.compare;
  std::vector<NamedInput> inputs;
  std::vector<fs::path> base, candidate;
  for (const auto& p : c.base) {
    inputs.push_back({"--base", p});
    base.emplace_back(p);
  }
  for (const auto& p : c.candidate) {
    inputs.push_back({"--candidate", p});
    candidate.emplace_back(p);
  }
  refuse_overwriting_inputs(args.out.output, inputs);
  const compare::Report report = compare::compare_traces(base, candidate, c.options);
  const std::string text = c.format == "json"       ? compare::render_json(report, c.limit)
                           : c.format == "markdown" ? compare::render_markdown(report, c.limit)
                                                    : compare::render_text(report, c.limit);
  write_or_print(args.out.output, text);
  if (!args.out.output.empty()) std::cerr << "wrote " << args.out.output << "\n";
  if (c.fail_on_regression < 0) return kExitOk;
  const auto slower = compare::regressions(report, c.fail_on_regression);
  auto pct = [](double ratio) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%+.1f%%", (ratio - 1.0) * 100.0);
    return std::string(buf);
  };
  for (const compare::Row* r : slower) {
    std::cerr << "regression: " << compare::row_kind_name(r->kind) << " " << shown_text(r->id, 200);
    if (r->verdict == compare::Verdict::became_non_finite)
      std::cerr << " holds NaN/Inf in " << r->candidate->non_finite_samples
                << " candidate samples and in none of the base's\n";
    else
      std::cerr << " is " << pct(*r->ratio) << " slower (interval " << pct(*r->ci_low) << " to "
                << pct(*r->ci_high) << "), above --fail-on-regression " << c.fail_on_regression
                << "%\n";
  }
  return slower.empty() ? kExitOk : kExitGate;
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"check",
       "Analyze a crate: IR to stdout or --output, diagnostics to stderr; fails on proven errors",
       "candle-graph check examples/tiny-llama --output model.json", analysis_flags, run_check},
      {"report", "Like check, but fails only with --strict or --deny",
       "candle-graph report . --format tree", analysis_flags, run_report},
      {"audit", "Write a bundle: summary.txt, findings (all of them), model.json, model.html",
       "candle-graph audit out/ examples/tiny-llama", audit_flags, run_audit},
      {"view", "Write the offline interactive HTML viewer",
       "candle-graph view examples/tiny-llama -o model.html [--runtime-trace run.jsonl] "
       "[--checkpoint model.safetensors]",
       view_flags, run_view},
      {"profile", "Merge runtime traces into the analysis and print the timing report (JSON)",
       "candle-graph profile examples/tiny-llama --runtime-trace run.jsonl", profile_flags,
       run_profile},
      {"verify", "Check a safetensors checkpoint (headers only) against the parameter inventory",
       "candle-graph verify examples/tiny-llama --checkpoint model.safetensors", verify_flags,
       run_verify},
      {"summary", "Print the torchinfo-style table: module tree, parameter shapes, counts, size",
       "candle-graph summary examples/tiny-llama --config examples/tiny-llama/config.json",
       summary_flags, run_summary},
      {"memory",
       "Print what the model needs in memory: weights (quantized: --gguf FILE or --quant TYPE), "
       "KV cache and state, activations, training, and whether it fits a device",
       "candle-graph memory examples/tiny-llama --config examples/tiny-llama/config.json "
       "--context 2048 --device-memory 8GiB",
       memory_flags, run_memory},
      {"query",
       "Answer one bounded query as a candle-graph/query/1 JSON envelope (kinds: " + kinds_list() +
           ")",
       "candle-graph query parameters embed --path examples/tiny-llama --limit 5", query_flags,
       run_query},
      {"mcp", "Serve the query kinds as MCP tools over stdio (JSON-RPC 2.0, one message a line)",
       "candle-graph mcp --path examples/tiny-llama", mcp_flags, run_mcp},
      {"instrument",
       "Print a unified diff adding per-module profiler scopes behind the Cargo feature "
       "candle-graph-profile",
       "candle-graph instrument examples/tiny-llama -o profile.diff && (cd examples/tiny-llama "
       "&& patch -p1 < ../../profile.diff)",
       instrument_flags, run_instrument},
      {"export", "Export a runtime/4 trace as Chrome Trace Event JSON (opens in Perfetto)",
       "candle-graph export --chrome trace.json --runtime-trace run.jsonl", export_flags,
       run_export},
      {"compare",
       "Compare base and candidate traces per module path and operation: median time change with "
       "a bootstrap interval and a verdict",
       "candle-graph compare --base main.jsonl --candidate pr.jsonl --fail-on-regression 5",
       compare_flags, run_compare},
  };
  return table;
}

}  // namespace cg::cli
