use candle::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use tiny_llama::{train::train_step, Config, TinyLlama};

fn main() -> Result<()> {
    let device = Device::Cpu;
    let cfg: Config = serde_json::from_str(&std::fs::read_to_string("config.json")?)
        .map_err(|e| candle::Error::Msg(e.to_string()))?;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
    let mut model = TinyLlama::new(&cfg, vb)?;
    let mut opt = AdamW::new(varmap.all_vars(), ParamsAdamW::default())?;
    let input_ids = Tensor::zeros((2, 16), DType::U32, &device)?;
    let targets = Tensor::zeros((2, 16), DType::U32, &device)?;
    for step in 0..10 {
        let loss = train_step(&mut model, &mut opt, &input_ids, &targets)?;
        println!("step {step} loss {loss:.4}");
    }
    Ok(())
}
