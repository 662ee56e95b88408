// Shared by the examples of tests/e2e/instrument_models.sh: installs the profiler when the
// feature is on and a trace path is given, and prints a checksum of the outputs so the runs with
// and without the feature can be compared.
#[allow(unused_variables, unexpected_cfgs)]
pub fn install(root_entry: &str) -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "candle-graph-profile")]
    if let Some(trace) = std::env::args().nth(1) {
        candle_graph_profile::install_global(trace, candle_graph_profile::ProfileConfig::infer(root_entry))?;
    }
    Ok(())
}

pub fn finish(sum: f64) -> Result<(), Box<dyn std::error::Error>> {
    if !sum.is_finite() {
        return Err(format!("output sum {sum}").into());
    }
    println!("output sum {sum:.6}");
    Ok(())
}
