use candle::{Module, Result, Tensor};
use candle_nn::{linear, Linear, VarBuilder};

pub struct Mlp {
    up: Linear,
    down: Linear,
}

impl Mlp {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let up = linear(4, 8, vb.pp("up"))?;
        let down = linear(8, 4, vb.pp("down"))?;
        Ok(Self { up, down })
    }
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.down.forward(&self.up.forward(xs)?.relu()?)
    }
}

pub struct Model {
    mlp: Mlp,
    pair: (Linear, f64),
}

impl Model {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        let mlp = Mlp::new(vb.pp("mlp"))?;
        let pair = (linear(4, 4, vb.pp("head"))?, 0.5);
        Ok(Model { mlp, pair })
    }

    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let ys = xs.apply(&self.mlp)?;
        self.pair.0.forward(&ys)
    }
}
