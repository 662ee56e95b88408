#include "instrument/stats_code.hpp"

#include <string_view>

namespace cg::instrument {

namespace {

// @CANDLE@: candle-core's name in the crate. Every path is spelled out in full (no `use` of the
// profiler's types), so the module compiles without a warning whichever parts a crate uses.
constexpr std::string_view kModule = R"rust(
// Added by `candle-graph instrument --stats`: numeric health by module path. After each
// instrumented forward (and each timed child call) the output's statistics are computed with the
// crate's own candle-core, on the tensor's device, reduced to a few numbers before they leave it,
// and written to the profiler's trace when its schedule asks (`CANDLE_GRAPH_STATS_EVERY=N`,
// `CANDLE_GRAPH_STATS_ON_NON_FINITE=1`); see candle-graph's docs/instrument.md.
#[cfg(feature = "candle-graph-stats")]
#[doc(hidden)]
#[allow(dead_code)]
pub mod cg_stats {
    use @CANDLE@::Tensor;

    /// A value a forward returns that holds tensors: each is visited with its position.
    pub trait CgStatsOut {
        fn cg_each(&self, index: &mut u64, f: &mut dyn FnMut(u64, &Tensor));
    }
    impl CgStatsOut for Tensor {
        fn cg_each(&self, index: &mut u64, f: &mut dyn FnMut(u64, &Tensor)) {
            f(*index, self);
            *index += 1;
        }
    }
    impl<T: CgStatsOut + ?Sized> CgStatsOut for &T {
        fn cg_each(&self, index: &mut u64, f: &mut dyn FnMut(u64, &Tensor)) {
            (**self).cg_each(index, f)
        }
    }
    impl<T: CgStatsOut, E> CgStatsOut for ::std::result::Result<T, E> {
        fn cg_each(&self, index: &mut u64, f: &mut dyn FnMut(u64, &Tensor)) {
            if let Ok(v) = self {
                v.cg_each(index, f)
            }
        }
    }
    impl<T: CgStatsOut> CgStatsOut for ::std::option::Option<T> {
        fn cg_each(&self, index: &mut u64, f: &mut dyn FnMut(u64, &Tensor)) {
            if let Some(v) = self {
                v.cg_each(index, f)
            }
        }
    }
    impl<T: CgStatsOut> CgStatsOut for ::std::vec::Vec<T> {
        fn cg_each(&self, index: &mut u64, f: &mut dyn FnMut(u64, &Tensor)) {
            for v in self {
                v.cg_each(index, f)
            }
        }
    }
    impl<A: CgStatsOut, B: CgStatsOut> CgStatsOut for (A, B) {
        fn cg_each(&self, index: &mut u64, f: &mut dyn FnMut(u64, &Tensor)) {
            self.0.cg_each(index, f);
            self.1.cg_each(index, f);
        }
    }
    impl<A: CgStatsOut, B: CgStatsOut, C: CgStatsOut> CgStatsOut for (A, B, C) {
        fn cg_each(&self, index: &mut u64, f: &mut dyn FnMut(u64, &Tensor)) {
            self.0.cg_each(index, f);
            self.1.cg_each(index, f);
            self.2.cg_each(index, f);
        }
    }

    /// `(&&Probe(&out)).cg_record(parent, child)` records `out` when its type holds tensors and
    /// does nothing otherwise, decided at compile time (method lookup tries `&Probe` first).
    pub struct Probe<'a, T: ?Sized>(pub &'a T);
    pub trait CgRecordStats {
        fn cg_record(&self, parent: &str, child: &str);
    }
    impl<T: CgStatsOut + ?Sized> CgRecordStats for &Probe<'_, T> {
        fn cg_record(&self, parent: &str, child: &str) {
            record(self.0, parent, child)
        }
    }
    pub trait CgRecordNothing {
        fn cg_record(&self, parent: &str, child: &str);
    }
    impl<T: ?Sized> CgRecordNothing for Probe<'_, T> {
        fn cg_record(&self, _parent: &str, _child: &str) {}
    }

    fn record<T: CgStatsOut + ?Sized>(out: &T, parent: &str, child: &str) {
        let due = candle_graph_profile::stats_due();
        if due == candle_graph_profile::StatsDue::None {
            return;
        }
        out.cg_each(&mut 0, &mut |index, t| match compute(t, due) {
            Ok(Some(mut s)) => {
                s.index = index;
                if child.is_empty() {
                    candle_graph_profile::record_stats(parent, &s)
                } else {
                    candle_graph_profile::record_child_stats(parent, child, &s)
                }
            }
            Ok(None) => {}
            Err(e) => failed(parent, child, &e),
        });
    }

    // A tensor whose statistics cannot be computed (a dtype or device without the comparison
    // kernels) is said once on stderr, never silently skipped.
    fn failed(parent: &str, child: &str, e: &dyn ::std::fmt::Display) {
        static SAID: ::std::sync::atomic::AtomicBool = ::std::sync::atomic::AtomicBool::new(false);
        if !SAID.swap(true, ::std::sync::atomic::Ordering::Relaxed) {
            let dot = if parent.is_empty() || child.is_empty() { "" } else { "." };
            eprintln!(
                "candle-graph stats: no statistics for {parent}{dot}{child}: {e} (said once; later failures are not reported)"
            );
        }
    }

    /// The statistics of `t` (docs/runtime-4.md, "Additions: tensor statistics"); `None` when
    /// `due` asks only for non-finite values and there are none. Two transfers from the device:
    /// five counts, then six numbers. Sums are taken in f32 over the values divided by their
    /// largest magnitude (no overflow); `mean` and `rms` are then kept within their bounds.
    pub fn compute(
        t: &Tensor,
        due: candle_graph_profile::StatsDue,
    ) -> @CANDLE@::Result<Option<candle_graph_profile::TensorStats>> {
        use @CANDLE@::DType;
        let full = due == candle_graph_profile::StatsDue::Full;
        let mut stats = candle_graph_profile::TensorStats {
            reason: if full {
                candle_graph_profile::StatsReason::Sampled
            } else {
                candle_graph_profile::StatsReason::NonFinite
            },
            dtype: t.dtype().as_str().to_string(),
            shape: t.dims().iter().map(|&d| d as u64).collect(),
            ..Default::default()
        };
        let n = t.elem_count();
        if n == 0 {
            return Ok(full.then_some(stats));
        }
        if n as u64 > u64::from(u32::MAX) {
            @CANDLE@::bail!("{n} elements: counts are taken in u32");
        }
        let x = t.flatten_all()?.to_dtype(DType::F32)?;
        let a = x.abs()?;
        // 1 where finite: NaN compares false and ±Inf exceed f32::MAX.
        let finite = a.le(f32::MAX)?;
        let count = |m: &Tensor| -> @CANDLE@::Result<Tensor> { m.to_dtype(DType::U32)?.sum_all() };
        if !full && count(&finite)?.to_scalar::<u32>()? as usize == n {
            return Ok(None);
        }
        let counts = Tensor::stack(
            &[
                count(&finite)?,
                count(&x.ne(&x)?)?,
                count(&x.eq(f32::INFINITY)?)?,
                count(&x.eq(f32::NEG_INFINITY)?)?,
                count(&x.eq(0f32)?)?,
            ],
            0,
        )?
        .to_vec1::<u32>()?;
        stats.nan = u64::from(counts[1]);
        stats.pos_inf = u64::from(counts[2]);
        stats.neg_inf = u64::from(counts[3]);
        stats.zeros = u64::from(counts[4]);
        let finite_count = u64::from(counts[0]);
        if finite_count > 0 {
            let zero = x.zeros_like()?;
            let big = zero.affine(0.0, f64::from(f32::MAX))?;
            let abs_max = finite.where_cond(&a, &zero)?.max(0)?;
            let lo = finite.where_cond(&x, &big)?.min(0)?;
            let hi = finite.where_cond(&x, &big.neg()?)?.max(0)?;
            let scale = abs_max.maximum(f32::MIN_POSITIVE)?;
            let scaled = finite.where_cond(&x, &zero)?.broadcast_div(&scale)?;
            let v = Tensor::stack(
                &[lo, hi, abs_max, scale, scaled.sum_all()?, scaled.sqr()?.sum_all()?],
                0,
            )?
            .to_vec1::<f32>()?;
            let (lo, hi, abs_max, scale) = (
                f64::from(v[0]),
                f64::from(v[1]),
                f64::from(v[2]),
                f64::from(v[3]),
            );
            let k = finite_count as f64;
            let mean = (f64::from(v[4]) / k * scale).max(lo).min(hi);
            let rms = ((f64::from(v[5]) / k).sqrt() * scale).max(mean.abs()).min(abs_max);
            stats.finite = Some(candle_graph_profile::FiniteStats {
                min: lo,
                max: hi,
                mean,
                rms,
                abs_max,
            });
        }
        Ok(Some(stats))
    }
@GRADS@}
)rust";

// @NN@: candle-nn's name in the crate.
constexpr std::string_view kGrads = R"rust(
    /// Gradient statistics per parameter, by its VarBuilder key: call it after `backward` with
    /// the `VarMap` the model was built from, e.g.
    /// `let grads = loss.backward()?; your_crate::cg_stats::grads(&varmap, &grads);`.
    /// A parameter the backward did not reach has a zero gradient and is recorded as such.
    pub fn grads(varmap: &@NN@::VarMap, grads: &@CANDLE@::backprop::GradStore) {
        let due = candle_graph_profile::stats_due();
        if due == candle_graph_profile::StatsDue::None {
            return;
        }
        let vars = varmap.data().lock().unwrap_or_else(|e| e.into_inner());
        let mut keys: Vec<&String> = vars.keys().collect();
        keys.sort();
        for key in keys {
            let var = vars[key].as_tensor();
            let stats = match grads.get(var) {
                Some(g) => compute(g, due),
                None => Ok((due == candle_graph_profile::StatsDue::Full).then(|| {
                    let n = var.elem_count() as u64;
                    candle_graph_profile::TensorStats {
                        dtype: var.dtype().as_str().to_string(),
                        shape: var.dims().iter().map(|&d| d as u64).collect(),
                        zeros: n,
                        finite: (n > 0).then(candle_graph_profile::FiniteStats::default),
                        ..Default::default()
                    }
                })),
            };
            match stats {
                Ok(Some(mut s)) => {
                    s.of = candle_graph_profile::StatsOf::Grad;
                    candle_graph_profile::record_stats(key, &s);
                }
                Ok(None) => {}
                Err(e) => failed(key, "", &e),
            }
        }
    }
)rust";

void replace_all(std::string& s, std::string_view from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

std::string stats_module_source(const std::string& candle, const std::string& candle_nn,
                                const std::string& eol) {
  std::string text(kModule);
  replace_all(text, "@GRADS@", candle_nn.empty() ? std::string() : std::string(kGrads));
  replace_all(text, "@CANDLE@", candle);
  replace_all(text, "@NN@", candle_nn);
  if (eol != "\n") replace_all(text, "\n", eol);
  return text;
}

std::string stats_record_call(const std::string& guard, const std::string& parent,
                              const std::string& child) {
  return std::string(kStatsAttr) + " { drop(" + guard +
         "); #[allow(unused_imports)] use crate::cg_stats::{CgRecordNothing as _, CgRecordStats as "
         "_}; "
         "(&&crate::cg_stats::Probe(&cg_out)).cg_record(" +
         parent + ", " + child + "); }";
}

std::optional<std::string> stats_return_problem(const std::string& return_type) {
  if (return_type.empty()) return "it returns nothing";
  if (return_type.find("impl ") != std::string::npos ||
      return_type.find("dyn ") != std::string::npos)
    return "its return type `" + return_type + "` names a trait (`impl`/`dyn`)";
  if (return_type.find('&') != std::string::npos || return_type.find('\'') != std::string::npos)
    return "its return type `" + return_type + "` borrows";
  return std::nullopt;
}

}  // namespace cg::instrument
