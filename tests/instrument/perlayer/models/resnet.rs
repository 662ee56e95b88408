// Runs candle-transformers' resnet (copied from CG_CANDLE_SRC by tests/e2e/instrument_models.sh):
// resnet18 with 10 classes, built of closure modules (`Func`), on a 32x32 image, three forwards.
// The stand-in's convolutions give zeros of the right shape; batch norms and the head compute.
mod cg_example;
use candle::{DType, Device, Module, Tensor};
use cg_model::models::resnet::resnet18;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    cg_example::install("resnet18")?;
    let device = Device::Cpu;
    let model = resnet18(10, candle_nn::VarBuilder::deterministic(&device))?;
    let image = Tensor::ones((1, 3, 32, 32), DType::F32, &device)?;
    let mut sum = 0f64;
    for _ in 0..3 {
        let logits = model.forward(&image)?;
        assert_eq!(logits.dims(), &[1, 10]);
        sum += logits.flatten_all()?.to_vec1::<f32>()?.iter().map(|v| *v as f64).sum::<f64>();
    }
    cg_example::finish(sum)
}
