// Runs candle-transformers' vit (copied from CG_CANDLE_SRC by tests/e2e/instrument_models.sh) on
// a tiny config: two layers on an 8x8 image in 4x4 patches, three forwards.
mod cg_example;
use candle::{DType, Device, Tensor};
use cg_model::models::vit::{Config, Model};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    cg_example::install("Model::forward")?;
    let device = Device::Cpu;
    let cfg = Config {
        hidden_size: 16,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        intermediate_size: 24,
        hidden_act: candle_nn::Activation::Gelu,
        layer_norm_eps: 1e-12,
        image_size: 8,
        patch_size: 4,
        num_channels: 3,
        qkv_bias: true,
    };
    let model = Model::new(&cfg, 10, candle_nn::VarBuilder::deterministic(&device))?;
    let image = Tensor::ones((1, 3, 8, 8), DType::F32, &device)?;
    let mut sum = 0f64;
    for _ in 0..3 {
        let logits = model.forward(&image)?;
        assert_eq!(logits.dims(), &[1, 10]);
        sum += logits.flatten_all()?.to_vec1::<f32>()?.iter().map(|v| *v as f64).sum::<f64>();
    }
    cg_example::finish(sum)
}
