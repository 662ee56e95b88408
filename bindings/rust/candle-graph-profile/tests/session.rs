//! The crate as a Candle program uses it: seed-style calls, then the written file read back by
//! hand (no serde: the crate has no dependencies).
use std::path::PathBuf;

use candle_graph_profile::{ErrorKind, ProfileConfig, ProfileSession, TimedOperation, TraceFormat};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cgp-rust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn lines(path: &PathBuf) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Replaces the digits after `"duration_ns":` with `D`.
fn mask_duration(line: &str) -> String {
    let key = "\"duration_ns\":";
    match line.find(key) {
        None => line.to_string(),
        Some(pos) => {
            let start = pos + key.len();
            let end = start
                + line[start..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
            format!("{}D{}", &line[..start], &line[end..])
        }
    }
}

/// The raw text of a flat record's scalar field (strings without quotes).
fn field(line: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\":");
    let start = line.find(&key)? + key.len();
    let rest = &line[start..];
    if let Some(stripped) = rest.strip_prefix('"') {
        return Some(stripped[..stripped.find('"')?].to_string());
    }
    Some(rest[..rest.find([',', '}'])?].to_string())
}

#[test]
fn seed_style_session_writes_the_seeds_runtime3_lines() {
    let path = scratch("nested/v3.jsonl");
    let mut config = ProfileConfig::train("model::train_step");
    config.format = TraceFormat::RuntimeV3;
    config.cargo_features = vec!["cuda".into()];
    config.build_id = Some("candle-graph/build/1:0123456789abcdef".into());
    // Written exactly like seed code: `let mut session`, `&mut session`, `?`-friendly results.
    let mut session = ProfileSession::open(&path, config).unwrap();
    let inputs = vec!["tensor:a".to_string()];
    let id = session
        .begin_operation("operation:train:f:1", "matmul", &inputs)
        .unwrap();
    assert_eq!(id, "train-op-0-1");
    session.set_step(2);
    assert_eq!(session.step(), 2);
    session
        .end_operation(&id, Some("tensor:out".into()))
        .unwrap();
    session
        .record_edge_timing("tensor:a", "operation:train:f:1", 17)
        .unwrap();
    {
        let _timed =
            TimedOperation::begin(&mut session, "operation:train:f:2", "softmax", &[]).unwrap();
    }
    let written = session.finish().unwrap();
    assert_eq!(written, path);

    let got: Vec<String> = lines(&path).iter().map(|l| mask_duration(l)).collect();
    assert_eq!(
        got,
        vec![
            r#"{"kind":"meta","schema":"candle-graph/runtime/3","entrypoint":"model::train_step","profile":"release","cargo_features":["cuda"],"cfg":[],"build_id":"candle-graph/build/1:0123456789abcdef","phase":"train"}"#,
            r#"{"kind":"operation","event_id":"train-op-0-1","op":"matmul","static_id":"operation:train:f:1","inputs":["tensor:a"],"output":"tensor:out","step":2,"duration_ns":D}"#,
            r#"{"kind":"edge_timing","event_id":"train-edge-2-2","from_static_id":"tensor:a","to_static_id":"operation:train:f:1","duration_ns":D,"step":2}"#,
            r#"{"kind":"operation","event_id":"train-op-2-3","op":"softmax","static_id":"operation:train:f:2","inputs":[],"step":2,"duration_ns":D}"#,
        ]
    );
    assert_eq!(
        field(&lines(&path)[2], "duration_ns").as_deref(),
        Some("17")
    );
}

#[test]
fn unknown_event_id_is_an_error() {
    let path = scratch("unknown.jsonl");
    let session = ProfileSession::open(&path, ProfileConfig::infer("model::generate")).unwrap();
    let err = session.end_operation("infer-op-0-41", None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnknownOperation);
    assert_eq!(err.to_string(), "unknown profile operation `infer-op-0-41`");
    // Usable with `?` in anyhow-style code: it is a std::error::Error + Send + Sync.
    let _boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err);
    session.finish().unwrap();
    assert_eq!(
        field(lines(&path).last().unwrap(), "errors").as_deref(),
        Some("1")
    );
}

/// `max_distinct_ids` reaches the library (through cgp_session_open_with): the third distinct id
/// is refused, the first two keep working, and the refusal is counted in `end.errors`.
#[test]
fn distinct_ids_past_the_configured_bound_are_refused_and_counted() {
    let path = scratch("bound.jsonl");
    let mut config = ProfileConfig::train("main");
    config.max_distinct_ids = 2;
    let session = ProfileSession::open(&path, config).unwrap();
    let id = session.begin_operation("s:0", "relu", &[]).unwrap();
    session.end_operation(&id, None).unwrap();
    session.op("s:1", "gelu", &[]).unwrap();
    let err = session.begin_operation("s:2", "relu", &[]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.message().contains("max_distinct_ids"),
        "{}",
        err.message()
    );
    let id = session.begin_operation("s:0", "relu", &[]).unwrap();
    session.end_operation(&id, None).unwrap();
    session.finish().unwrap();
    let end = lines(&path).last().unwrap().clone();
    assert_eq!(field(&end, "errors").as_deref(), Some("1"), "{end}");
    assert_eq!(field(&end, "operations").as_deref(), Some("2"), "{end}");
}

#[test]
fn open_fails_clearly_on_an_unwritable_path() {
    let blocker = scratch("blocker");
    std::fs::write(&blocker, "a file").unwrap();
    let err = match ProfileSession::open(blocker.join("t.jsonl"), ProfileConfig::train("m")) {
        Ok(_) => panic!("open under a file must fail"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(
        err.message().starts_with("create profile dir "),
        "{}",
        err.message()
    );
}

#[test]
fn guards_end_their_operations_and_nest() {
    let path = scratch("guards.jsonl");
    let session = ProfileSession::open(&path, ProfileConfig::train("main")).unwrap();
    let outer = session.op("operation:train:f:0", "linear", &[]).unwrap();
    let inner = session.op("operation:train:f:1", "matmul", &[]).unwrap();
    {
        let _o = outer.scope();
        let _i = inner.scope();
        let _t = TimedOperation::begin(&session, "operation:train:f:2", "add", &[]).unwrap();
    }
    session.finish().unwrap();
    let l = lines(&path);
    assert_eq!(l.len(), 5, "{l:?}");
    assert_eq!(
        field(&l[0], "schema").as_deref(),
        Some("candle-graph/runtime/4")
    );
    // Dropped innermost first: the TimedOperation, then inner, then outer.
    assert_eq!(field(&l[1], "event_id").as_deref(), Some("train-op-0-3"));
    assert_eq!(field(&l[1], "parent").as_deref(), Some("train-op-0-2"));
    assert_eq!(field(&l[2], "event_id").as_deref(), Some("train-op-0-2"));
    assert_eq!(field(&l[2], "parent").as_deref(), Some("train-op-0-1"));
    assert_eq!(field(&l[3], "event_id").as_deref(), Some("train-op-0-1"));
    assert_eq!(field(&l[3], "parent"), None);
    assert_eq!(field(&l[4], "kind").as_deref(), Some("end"));
    assert_eq!(field(&l[4], "operations").as_deref(), Some("3"));
    assert_eq!(field(&l[4], "open_operations").as_deref(), Some("0"));
}

#[test]
fn handles_from_many_threads_lose_nothing() {
    let path = scratch("threads.jsonl");
    let session = ProfileSession::open(&path, ProfileConfig::train("main")).unwrap();
    let op = session.op("operation:train:f:0", "matmul", &[]).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..10_000 {
                    let _g = op.scope();
                }
            });
        }
    });
    session.finish().unwrap();
    let l = lines(&path);
    let ids: std::collections::HashSet<String> = l[1..l.len() - 1]
        .iter()
        .map(|line| field(line, "event_id").unwrap())
        .collect();
    assert_eq!(ids.len(), 40_000);
    assert_eq!(
        field(l.last().unwrap(), "operations").as_deref(),
        Some("40000")
    );
    assert_eq!(field(l.last().unwrap(), "dropped").as_deref(), Some("0"));
}

#[test]
fn c_abi_compiles_as_c_and_behaves() {
    let path = scratch("c-abi.jsonl");
    let c_path = std::ffi::CString::new(path.to_string_lossy().as_bytes()).unwrap();
    assert_eq!(candle_graph_profile::test_support::c_abi_smoke(&c_path), 0);
    let got: Vec<String> = lines(&path).iter().map(|l| mask_duration(l)).collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(
        got[1],
        r#"{"kind":"operation","event_id":"infer-op-0-1","op":"matmul","static_id":"operation:infer:c:0","inputs":["tensor:x"],"step":0,"duration_ns":D}"#
    );
    assert_eq!(field(&got[2], "event_id").as_deref(), Some("infer-op-2-2"));
    assert_eq!(
        field(&got[3], "event_id").as_deref(),
        Some("infer-edge-2-3")
    );
}

#[test]
fn seed_calls_into_the_compact_encoding_write_each_id_once() {
    let path = scratch("compact.jsonl");
    let mut config = ProfileConfig::train("model::train_step");
    config.format = TraceFormat::RuntimeV4Compact;
    let session = ProfileSession::open(&path, config).unwrap();
    let inputs = vec!["tensor:a".to_string()];
    let ids: Vec<String> = (0..4).map(|i| format!("operation:train:f:{i}")).collect();
    for i in 0..400usize {
        // The seed's call shape: a fresh String each time.
        let id = session
            .begin_operation(ids[i % 4].clone(), "matmul", &inputs)
            .unwrap();
        session.end_operation(&id, None).unwrap();
    }
    session.finish().unwrap();
    let l = lines(&path);
    assert!(
        l[0].contains(r#""schema":"candle-graph/runtime/4-compact/1""#),
        "{}",
        l[0]
    );
    let defs: Vec<&String> = l
        .iter()
        .filter(|x| x.starts_with(r#"{"kind":"def""#))
        .collect();
    assert_eq!(defs.len(), 4, "{defs:?}");
    assert_eq!(
        defs[0],
        r#"{"kind":"def","h":0,"op":"matmul","static_id":"operation:train:f:0","inputs":["tensor:a"]}"#
    );
    let ops = l.iter().filter(|x| x.starts_with(r#"{"kind":"o""#)).count();
    assert_eq!(ops, 400);
    assert_eq!(
        field(l.last().unwrap(), "operations").as_deref(),
        Some("400")
    );
}

#[test]
fn module_scopes_time_module_and_idempotent_finish() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let path = scratch("modules.jsonl");
    let syncs = Arc::new(AtomicUsize::new(0));
    let counted = syncs.clone();
    let config = ProfileConfig::infer("model::forward").with_device_sync(move || {
        counted.fetch_add(1, Ordering::Relaxed);
    });
    let session = ProfileSession::open(&path, config).unwrap();
    let prefix = String::from("model.layers.0");
    let out = {
        let _layer = session.module_scope(&prefix);
        session.time_module(&format!("{prefix}.self_attn"), || 7 * 6)
    };
    assert_eq!(out, 42);
    assert_eq!(syncs.load(Ordering::Relaxed), 4);
    let first = session.finish().unwrap();
    assert_eq!(session.finish().unwrap(), first, "finish is idempotent");
    assert!(!session.module_scope("model").is_active());
    let l = lines(&path);
    assert_eq!(field(&l[0], "device_sync").as_deref(), Some("true"));
    assert_eq!(
        field(&l[1], "path").as_deref(),
        Some("model.layers.0.self_attn")
    );
    assert_eq!(field(&l[1], "parent").as_deref(), Some("infer-mod-0-1"));
    assert_eq!(field(&l[2], "event_id").as_deref(), Some("infer-mod-0-1"));
    assert_eq!(field(l.last().unwrap(), "modules").as_deref(), Some("2"));
}

#[test]
fn tensor_statistics_are_written_and_an_inconsistent_record_is_refused() {
    use candle_graph_profile::{FiniteStats, StatsDue, StatsOf, StatsReason, TensorStats};
    let path = scratch("stats.jsonl");
    let mut config = ProfileConfig::train("model::train_step");
    config.stats_every = 4;
    config.stats_on_non_finite = true;
    let session = ProfileSession::open(&path, config).unwrap();
    session.set_step(8);
    assert_eq!(session.stats_due(), StatsDue::Full);
    session.set_step(9);
    assert_eq!(session.stats_due(), StatsDue::NonFiniteOnly);
    // A gradient [2, 2] holding 1.0, -2.0, 0.0 and a NaN.
    let grad = TensorStats {
        of: StatsOf::Grad,
        reason: StatsReason::NonFinite,
        dtype: "f32".into(),
        shape: vec![2, 2],
        nan: 1,
        zeros: 1,
        finite: Some(FiniteStats {
            min: -2.0,
            max: 1.0,
            mean: -1.0 / 3.0,
            rms: (5.0f64 / 3.0).sqrt(),
            abs_max: 2.0,
        }),
        ..TensorStats::default()
    };
    session
        .record_stats("model.layers.0.mlp.up_proj.weight", &grad)
        .unwrap();
    let bad = TensorStats {
        zeros: 9,
        ..grad.clone()
    };
    let err = session.record_stats("model.norm.weight", &bad).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("zeros"), "{}", err.message());
    session.finish().unwrap();

    let lines = lines(&path);
    let stats: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("{\"kind\":\"stats\""))
        .collect();
    assert_eq!(stats.len(), 1);
    assert_eq!(
        field(stats[0], "path").as_deref(),
        Some("model.layers.0.mlp.up_proj.weight")
    );
    assert_eq!(field(stats[0], "of").as_deref(), Some("grad"));
    assert_eq!(field(stats[0], "reason").as_deref(), Some("non_finite"));
    assert_eq!(field(stats[0], "elements").as_deref(), Some("4"));
    let rms: f64 = field(stats[0], "rms").unwrap().parse().unwrap();
    assert_eq!(rms, (5.0f64 / 3.0).sqrt());
    let end = lines.last().unwrap();
    assert_eq!(field(end, "stats").as_deref(), Some("1"));
    assert_eq!(field(end, "errors").as_deref(), Some("1"));
    assert_eq!(field(&lines[0], "stats_every").as_deref(), Some("4"));
}
