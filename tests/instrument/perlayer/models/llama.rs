// Runs candle-transformers' llama (copied from CG_CANDLE_SRC by tests/e2e/instrument_models.sh)
// on a tiny config: two layers, grouped-query attention, three forwards with the KV cache on.
mod cg_example;
use candle::{DType, Device, Tensor};
use cg_model::models::llama::{Cache, Config, Llama};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    cg_example::install("Llama::forward")?;
    let device = Device::Cpu;
    let cfg = Config {
        hidden_size: 16,
        intermediate_size: 24,
        vocab_size: 32,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        use_flash_attn: false,
        rms_norm_eps: 1e-5,
        rope_theta: 10_000.0,
        bos_token_id: None,
        eos_token_id: None,
        rope_scaling: None,
        max_position_embeddings: 32,
        tie_word_embeddings: false,
    };
    let model = Llama::load(candle_nn::VarBuilder::deterministic(&device), &cfg)?;
    let mut cache = Cache::new(true, DType::F32, &cfg, &device)?;
    let mut pos = 0;
    let mut sum = 0f64;
    for ids in [vec![1u32, 5, 7], vec![3], vec![9]] {
        let n = ids.len();
        let x = Tensor::new(ids.as_slice(), &device)?.unsqueeze(0)?;
        let logits = model.forward(&x, pos, &mut cache)?;
        assert_eq!(logits.dims(), &[1, 32]);
        sum += logits.to_vec2::<f32>()?.iter().flatten().map(|v| *v as f64).sum::<f64>();
        pos += n;
    }
    cg_example::finish(sum)
}
