// Runs candle-transformers' t5 (copied from CG_CANDLE_SRC by tests/e2e/instrument_models.sh) on a
// tiny config: two encoder and two decoder layers, gated-GELU feed-forward (as T5 v1.1 and
// flan-t5), an encoder pass and three decoder steps with the KV cache on.
mod cg_example;
use candle::{Device, Tensor};
use cg_model::models::t5::{ActivationWithOptionalGating, Config, T5ForConditionalGeneration};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    cg_example::install("T5ForConditionalGeneration::forward")?;
    let device = Device::Cpu;
    let cfg = Config {
        vocab_size: 32,
        d_model: 16,
        d_kv: 4,
        d_ff: 24,
        num_layers: 2,
        num_decoder_layers: Some(2),
        num_heads: 4,
        relative_attention_num_buckets: 8,
        relative_attention_max_distance: 16,
        feed_forward_proj: ActivationWithOptionalGating { gated: true, activation: candle_nn::Activation::NewGelu },
        tie_word_embeddings: false,
        ..Config::default()
    };
    let mut model = T5ForConditionalGeneration::load(candle_nn::VarBuilder::deterministic(&device), &cfg)?;
    let ids = Tensor::new(&[1u32, 5, 7, 2], &device)?.unsqueeze(0)?;
    let encoded = model.encode(&ids)?;
    let mut sum = 0f64;
    let mut out = vec![0u32];
    for step in 0..3 {
        let dec = Tensor::new(&[*out.last().unwrap()], &device)?.unsqueeze(0)?;
        let logits = model.decode(&dec, &encoded)?;
        assert_eq!(logits.dims(), &[1, 32], "step {step}");
        sum += logits.flatten_all()?.to_vec1::<f32>()?.iter().map(|v| *v as f64).sum::<f64>();
        out.push(step as u32 + 3);
    }
    cg_example::finish(sum)
}
