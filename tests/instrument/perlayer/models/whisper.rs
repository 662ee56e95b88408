// Runs candle-transformers' whisper (copied from CG_CANDLE_SRC by tests/e2e/instrument_models.sh)
// on a tiny config: two encoder and two decoder layers, an encoder pass over 16 mel frames and
// three decoder steps, as a transcription loop calls them.
mod cg_example;
use candle::{DType, Device, Tensor};
use cg_model::models::whisper::{model::Whisper, Config};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    cg_example::install("AudioEncoder::forward")?;
    let device = Device::Cpu;
    let cfg = Config {
        num_mel_bins: 4,
        max_source_positions: 8,
        d_model: 16,
        encoder_attention_heads: 4,
        encoder_layers: 2,
        vocab_size: 32,
        max_target_positions: 8,
        decoder_attention_heads: 4,
        decoder_layers: 2,
        suppress_tokens: vec![],
    };
    let mut model = Whisper::load(&candle_nn::VarBuilder::deterministic(&device), cfg)?;
    let mel = Tensor::ones((1, 4, 16), DType::F32, &device)?;
    let audio = model.encoder.forward(&mel, true)?;
    assert_eq!(audio.dims(), &[1, 8, 16]);
    let mut sum = 0f64;
    let mut tokens = vec![1u32];
    for step in 0..3 {
        let ids = Tensor::new(tokens.as_slice(), &device)?.unsqueeze(0)?;
        let ys = model.decoder.forward(&ids, &audio, true)?;
        let logits = model.decoder.final_linear(&ys.narrow(1, tokens.len() - 1, 1)?)?;
        assert_eq!(logits.dims(), &[1, 1, 32], "step {step}");
        sum += logits.flatten_all()?.to_vec1::<f32>()?.iter().map(|v| *v as f64).sum::<f64>();
        tokens.push(step + 3);
    }
    cg_example::finish(sum)
}
