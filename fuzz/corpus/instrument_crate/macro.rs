use candle::{Module, Result, Tensor};
use candle_nn::{linear, Linear, VarBuilder};

macro_rules! gated_layer {
    ($name:ident) => {
        pub struct $name { proj: Linear }
        impl $name {
            pub fn new(vb: VarBuilder) -> Result<Self> {
                Ok(Self { proj: linear(4, 4, vb.pp("proj"))? })
            }
            pub fn forward(&self, xs: &Tensor) -> Result<Tensor> { self.proj.forward(xs) }
        }
    };
}
gated_layer!(Gated);

pub struct Model {
    head: Linear,
    gate: Gated,
}

impl Model {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let head = linear(4, 4, vb.pp("head"))?;
        let gate = Gated::new(vb.pp("gate"))?;
        Ok(Self { head, gate })
    }
    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.gate.forward(&self.head.forward(xs)?)
    }
}
