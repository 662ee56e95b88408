//! Compiles the profiler library (`src/profile/*.cpp` at the repository root) and the C ABI smoke
//! program into a static library in OUT_DIR with the system compilers, then links it together
//! with the C++ runtime. No CMake and no crates needed.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

fn spawn(tool: &str, args: &[&str], src: &Path, obj: &Path) -> Child {
    Command::new(tool)
        .args(args)
        .arg("-c")
        .arg(src)
        .arg("-o")
        .arg(obj)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run `{tool}` to compile {}: {e}", src.display()))
}

/// The candle-graph checkout whose `src/profile/*.cpp` and `include/` this crate compiles:
/// `CANDLE_GRAPH_SRC` when set, else the checkout this crate sits in (`../../..`). A copy of the
/// crate outside a checkout must set `CANDLE_GRAPH_SRC`.
fn repository_root(manifest: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=CANDLE_GRAPH_SRC");
    let (root, from_env) = match env::var_os("CANDLE_GRAPH_SRC") {
        Some(v) if !v.is_empty() => (PathBuf::from(v), true),
        _ => (manifest.join("../../.."), false),
    };
    let marker = root.join("include/candle_graph_profile.h");
    if !marker.is_file() || !root.join("src/profile").is_dir() {
        if from_env {
            panic!(
                "CANDLE_GRAPH_SRC={} is not a candle-graph checkout: {} is missing \
                 (it needs include/ and src/profile/)",
                root.display(),
                marker.display()
            );
        }
        panic!(
            "candle-graph-profile compiles the profiler from a candle-graph checkout, and {} is \
             not one (this copy of the crate is outside bindings/rust/ of a checkout): set \
             CANDLE_GRAPH_SRC to the checkout's root, e.g. \
             CANDLE_GRAPH_SRC=$HOME/src/candle-graph cargo build",
            root.display()
        );
    }
    root
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = repository_root(&manifest);
    let src_dir = root.join("src/profile");
    let include = root.join("include");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let cxx = env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let inc_public = format!("-I{}", include.display());
    let inc_private = format!("-I{}", root.join("src").display());

    let mut sources: Vec<PathBuf> = fs::read_dir(&src_dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", src_dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().map_or(false, |ext| ext == "cpp"))
        .collect();
    sources.sort();

    let cxx_args = [
        "-O2",
        "-std=c++20",
        "-fPIC",
        "-pthread",
        &inc_public,
        &inc_private,
    ];
    let mut jobs = Vec::new();
    let mut objects = Vec::new();
    for src in &sources {
        let obj = out.join(format!("{}.o", src.file_stem().unwrap().to_string_lossy()));
        jobs.push((src.clone(), spawn(&cxx, &cxx_args, src, &obj)));
        objects.push(obj);
    }
    // The C ABI must compile as strict C: a small C program that drives it, called by the tests.
    let smoke = manifest.join("csrc/abi_smoke.c");
    let smoke_obj = out.join("abi_smoke.o");
    let c_args = [
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-Wpedantic",
        "-Werror",
        "-O2",
        "-fPIC",
        &inc_public,
    ];
    jobs.push((smoke.clone(), spawn(&cc, &c_args, &smoke, &smoke_obj)));
    objects.push(smoke_obj);
    for (src, mut child) in jobs {
        let status = child.wait().expect("wait for compiler");
        assert!(status.success(), "compiling {} failed", src.display());
    }

    let lib = out.join("libcandle_graph_profile.a");
    let _ = fs::remove_file(&lib);
    let status = Command::new(env::var("AR").unwrap_or_else(|_| "ar".to_string()))
        .arg("crs")
        .arg(&lib)
        .args(&objects)
        .status()
        .expect("run ar");
    assert!(status.success(), "ar failed");

    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=candle_graph_profile");
    println!("cargo:rustc-link-lib=dylib=stdc++");
    println!("cargo:rustc-link-lib=dylib=pthread");
    println!("cargo:rerun-if-changed={}", src_dir.display());
    for src in &sources {
        println!("cargo:rerun-if-changed={}", src.display());
    }
    for header in fs::read_dir(&src_dir).unwrap().map(|e| e.unwrap().path()) {
        println!("cargo:rerun-if-changed={}", header.display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        include.join("candle_graph_profile.h").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        include.join("candle_graph/profile.hpp").display()
    );
    println!("cargo:rerun-if-changed={}", smoke.display());
    println!("cargo:rerun-if-env-changed=CXX");
    println!("cargo:rerun-if-env-changed=CC");
}
