//! The global session as a Candle program uses it: installed once from `main`, module scopes from
//! a `static` on several threads, and the process ending through `std::process::exit`. The
//! program runs as a child process (this test binary re-run with `CGP_GLOBAL_CHILD_TRACE` set),
//! so its exit is real; the parent reads the trace it left.
use std::path::PathBuf;
use std::process::Command;

const CHILD_ENV: &str = "CGP_GLOBAL_CHILD_TRACE";

fn field(line: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\":");
    let start = line.find(&key)? + key.len();
    let rest = &line[start..];
    if let Some(stripped) = rest.strip_prefix('"') {
        return Some(stripped[..stripped.find('"')?].to_string());
    }
    Some(rest[..rest.find([',', '}'])?].to_string())
}

struct Attention {
    cg_path: String,
}

impl Attention {
    fn forward(&self, x: u64) -> u64 {
        let _cg_scope = candle_graph_profile::module_scope(&self.cg_path);
        // A candle-nn layer it holds, timed as its child (what `instrument` writes).
        let q = {
            let _cg_child = candle_graph_profile::child_scope(&self.cg_path, "q_proj");
            x.wrapping_mul(31)
        };
        q.wrapping_add(7)
    }
}

/// The child: what `main` of an instrumented Candle program does. Skipped unless run by the
/// parent test below.
#[test]
fn child_program() {
    let Ok(trace) = std::env::var(CHILD_ENV) else {
        return;
    };
    let config = candle_graph_profile::ProfileConfig::infer("model::forward");
    candle_graph_profile::install_global(&trace, config).expect("install_global");
    assert!(candle_graph_profile::install_global(
        &trace,
        candle_graph_profile::ProfileConfig::infer("x")
    )
    .is_err());
    let threads: Vec<_> = (0..3)
        .map(|t| {
            std::thread::spawn(move || {
                let layers: Vec<Attention> = (0..4)
                    .map(|i| Attention {
                        cg_path: format!("model.layers.{i}.self_attn"),
                    })
                    .collect();
                let mut x = t;
                for _ in 0..10 {
                    let _layer_scope = candle_graph_profile::module_scope("model.layers");
                    for layer in &layers {
                        x = layer.forward(x);
                    }
                }
                x
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let session = candle_graph_profile::global().expect("global session");
    // The parent set CANDLE_GRAPH_STATS_EVERY=5: step 0 is due, step 3 is not.
    assert_eq!(
        candle_graph_profile::stats_due(),
        candle_graph_profile::StatsDue::Full
    );
    candle_graph_profile::record_child_stats(
        "model.layers.0",
        "mlp",
        &candle_graph_profile::TensorStats {
            dtype: "f32".into(),
            shape: vec![1],
            zeros: 1,
            finite: Some(candle_graph_profile::FiniteStats::default()),
            ..Default::default()
        },
    );
    session.set_step(3);
    assert_eq!(
        candle_graph_profile::stats_due(),
        candle_graph_profile::StatsDue::None
    );
    let value = session.time_module("model.norm", || 42u32);
    assert_eq!(value, 42);
    // Left open at exit: counted in end.open_modules, and the exit hook still writes `end`.
    let _open = candle_graph_profile::module_scope("model");
    std::process::exit(0);
}

#[test]
fn global_session_survives_process_exit() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    // No global session in this process: the free functions are no-ops.
    assert!(candle_graph_profile::module_scope("model").is_none());
    assert_eq!(
        candle_graph_profile::stats_due(),
        candle_graph_profile::StatsDue::None
    );
    assert!(candle_graph_profile::child_scope("model", "lm_head").is_none());
    assert!(candle_graph_profile::global().is_none());

    let dir = std::env::temp_dir().join(format!("cgp-rust-global-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace: PathBuf = dir.join("global.jsonl");
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_program",
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD_ENV, &trace)
        .env("CANDLE_GRAPH_STATS_EVERY", "5")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run the child program");
    assert!(status.success(), "child exited with {status}");
    let text = std::fs::read_to_string(&trace).expect("trace written");
    let lines: Vec<&str> = text.lines().collect();
    let end = lines.last().expect("non-empty trace");
    assert!(end.starts_with(r#"{"kind":"end""#), "no end record: {end}");
    let modules: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with(r#"{"kind":"module""#))
        .collect();
    // 3 threads x 10 iterations x (1 + 4 layers x (attention + its q_proj)) + model.norm.
    assert_eq!(modules.len(), 3 * 10 * 9 + 1);
    assert_eq!(field(end, "modules").as_deref(), Some("271"));
    assert_eq!(field(end, "open_modules").as_deref(), Some("1"));
    assert_eq!(field(end, "errors").as_deref(), Some("0"));
    // The environment's schedule reached meta, and the one statistics record was written.
    assert_eq!(field(lines[0], "stats_every").as_deref(), Some("5"));
    assert_eq!(field(end, "stats").as_deref(), Some("1"));
    let stats = lines
        .iter()
        .find(|l| l.starts_with(r#"{"kind":"stats""#))
        .expect("a stats line");
    assert_eq!(field(stats, "path").as_deref(), Some("model.layers.0.mlp"));
    let attn: Vec<&&&str> = modules
        .iter()
        .filter(|l| field(l, "path").as_deref() == Some("model.layers.2.self_attn"))
        .collect();
    assert_eq!(attn.len(), 30);
    // Each attention scope's parent is its thread's `model.layers` scope.
    assert!(attn.iter().all(|l| field(l, "parent").is_some()));
    // The child is `parent.child`, nested in its parent's scope.
    let ids: std::collections::BTreeSet<String> =
        attn.iter().filter_map(|l| field(l, "event_id")).collect();
    let q: Vec<&&&str> = modules
        .iter()
        .filter(|l| field(l, "path").as_deref() == Some("model.layers.2.self_attn.q_proj"))
        .collect();
    assert_eq!(q.len(), 30);
    assert!(q
        .iter()
        .all(|l| field(l, "parent").map_or(false, |p| ids.contains(&p))));
    let threads: std::collections::BTreeSet<String> =
        modules.iter().filter_map(|l| field(l, "thread")).collect();
    assert!(threads.len() >= 3, "threads {threads:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
