//! A crate-local wrapper around a candle-nn layer, built the way candle-transformers'
//! `with_tracing::Linear` is: in a free function taking the VarBuilder (and in `from_weights`),
//! not in a constructor of its own. The analysis sees the candle-nn layer inside it, so its
//! caller times each call as a child (`….self_attn.o_proj`).
use candle::{Module, Result, Tensor};
use candle_nn::VarBuilder;

#[derive(Debug, Clone)]
pub struct TracedLinear {
    inner: candle_nn::Linear,
    calls: std::cell::Cell<usize>,
}

impl TracedLinear {
    pub fn from_weights(weight: Tensor, bias: Option<Tensor>) -> Self {
        let inner = candle_nn::Linear::new(weight, bias);
        Self { inner, calls: std::cell::Cell::new(0) }
    }
}

// Built here, outside any method of the type, as `with_tracing::linear_no_bias` is.
pub fn traced_linear(d1: usize, d2: usize, vb: VarBuilder) -> Result<TracedLinear> {
    let inner = candle_nn::linear_no_bias(d1, d2, vb)?;
    Ok(TracedLinear { inner, calls: std::cell::Cell::new(0) })
}

impl Module for TracedLinear {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.calls.set(self.calls.get() + 1);
        self.inner.forward(xs)
    }
}
