//! Stand-in for candle-transformers' `quantized_var_builder.rs`, named by `with_tracing::QMatMul`
//! (compiled, never run by the build check).
use candle::quantized::QTensor;
use candle::{Result, Shape};
use std::sync::Arc;

#[derive(Clone)]
pub struct VarBuilder {
    inner: candle_nn::VarBuilder<'static>,
}

impl VarBuilder {
    pub fn get<S: Into<Shape>>(&self, s: S, name: &str) -> Result<Arc<QTensor>> {
        Ok(Arc::new(QTensor { weight: self.inner.get(s, name)? }))
    }
}
