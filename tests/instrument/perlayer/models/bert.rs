// Runs candle-transformers' bert (copied from CG_CANDLE_SRC by tests/e2e/instrument_models.sh)
// on a tiny config: two layers, a batch of two sequences of four tokens, with a padding mask.
mod cg_example;
use candle::{Device, Tensor};
use cg_model::models::bert::{BertModel, Config};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    cg_example::install("BertModel::forward")?;
    let device = Device::Cpu;
    let cfg = Config {
        vocab_size: 32,
        hidden_size: 16,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        intermediate_size: 24,
        max_position_embeddings: 16,
        type_vocab_size: 2,
        ..Config::default()
    };
    let model = BertModel::load(candle_nn::VarBuilder::deterministic(&device), &cfg)?;
    let ids = Tensor::new(&[[1u32, 5, 7, 2], [3, 4, 0, 0]], &device)?;
    let types = ids.zeros_like()?;
    let mask = Tensor::new(&[[1u32, 1, 1, 1], [1, 1, 0, 0]], &device)?;
    let mut sum = 0f64;
    for _ in 0..3 {
        let ys = model.forward(&ids, &types, Some(&mask))?;
        assert_eq!(ys.dims(), &[2, 4, 16]);
        sum += ys.flatten_all()?.to_vec1::<f32>()?.iter().map(|v| *v as f64).sum::<f64>();
    }
    cg_example::finish(sum)
}
