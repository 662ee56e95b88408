use candle::{Result, Tensor};
use candle_nn::{loss, Optimizer};

use crate::model::TinyLlama;

/// Next-token cross-entropy over every position: logits (b, t, v) against targets (b, t).
pub fn lm_loss(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let (b, t, v) = logits.dims3()?;
    let logits = logits.reshape((b * t, v))?;
    let targets = targets.reshape(b * t)?;
    loss::cross_entropy(&logits, &targets)
}

/// One optimisation step; returns the loss value.
pub fn train_step<O: Optimizer>(
    model: &mut TinyLlama,
    opt: &mut O,
    input_ids: &Tensor,
    targets: &Tensor,
) -> Result<f32> {
    model.clear_kv_cache();
    let logits = model.forward_all(input_ids)?;
    let loss = lm_loss(&logits, targets)?;
    opt.backward_step(&loss)?;
    loss.to_scalar::<f32>()
}
