//! A stand-in for candle-nn, written for candle-graph's build check (not Hugging Face code): a
//! VarBuilder that makes deterministic small weights from its key instead of reading a checkpoint,
//! and the layers the `model` fixture holds. The constructors ask the builder for the same keys
//! and shapes as candle-nn's, so the analysis sees the same parameters.
use candle::{DType, Device, Module, Result, Shape, Tensor};

#[derive(Clone)]
pub struct VarBuilder {
    path: Vec<String>,
    device: Device,
}

impl VarBuilder {
    /// Weights computed from each key: `0.1 * sin(hash(key) + i)`.
    pub fn deterministic(device: &Device) -> Self {
        Self { path: vec![], device: *device }
    }
    pub fn pp<S: ToString>(&self, s: S) -> Self {
        self.push_prefix(s)
    }
    pub fn push_prefix<S: ToString>(&self, s: S) -> Self {
        let mut path = self.path.clone();
        path.push(s.to_string());
        Self { path, device: self.device }
    }
    pub fn prefix(&self) -> String {
        self.path.join(".")
    }
    pub fn device(&self) -> &Device {
        &self.device
    }
    pub fn dtype(&self) -> DType {
        DType::F32
    }
    pub fn get<S: Shape>(&self, s: S, name: &str) -> Result<Tensor> {
        let dims = s.dims();
        let key = if self.path.is_empty() { name.to_string() } else { format!("{}.{name}", self.prefix()) };
        let seed = key.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32)) % 1000;
        let n: usize = dims.iter().product();
        let data = (0..n).map(|i| 0.1 * ((seed as usize + i) as f32).sin()).collect();
        match dims.len() {
            1 => Tensor::from_vec(data, dims[0], &self.device),
            2 => Tensor::from_vec(data, (dims[0], dims[1]), &self.device),
            _ => Tensor::from_vec(data, (dims[0], dims[1], dims[2]), &self.device),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Linear {
    pub fn new(weight: Tensor, bias: Option<Tensor>) -> Self {
        Self { weight, bias }
    }
}

impl Module for Linear {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let y = xs.matmul_t(&self.weight)?;
        match &self.bias {
            None => Ok(y),
            Some(b) => y.broadcast_add(b),
        }
    }
}

pub fn linear(in_dim: usize, out_dim: usize, vb: VarBuilder) -> Result<Linear> {
    let ws = vb.get((out_dim, in_dim), "weight")?;
    let bs = vb.get(out_dim, "bias")?;
    Ok(Linear::new(ws, Some(bs)))
}

pub fn linear_no_bias(in_dim: usize, out_dim: usize, vb: VarBuilder) -> Result<Linear> {
    let ws = vb.get((out_dim, in_dim), "weight")?;
    Ok(Linear::new(ws, None))
}

#[derive(Clone, Debug)]
pub struct Embedding {
    embeddings: Tensor,
}

impl Embedding {
    pub fn new(embeddings: Tensor, _hidden_size: usize) -> Self {
        Self { embeddings }
    }
}

impl Module for Embedding {
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        ids.gather_rows(&self.embeddings)
    }
}

pub fn embedding(in_size: usize, out_size: usize, vb: VarBuilder) -> Result<Embedding> {
    let embeddings = vb.get((in_size, out_size), "weight")?;
    Ok(Embedding::new(embeddings, out_size))
}

#[derive(Clone, Debug)]
pub struct RmsNorm {
    weight: Tensor,
    eps: f64,
}

impl RmsNorm {
    pub fn new(weight: Tensor, eps: f64) -> Self {
        Self { weight, eps }
    }
}

impl Module for RmsNorm {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.rms_normalize(self.eps)?.broadcast_mul(&self.weight)
    }
}

pub fn rms_norm(size: usize, eps: f64, vb: VarBuilder) -> Result<RmsNorm> {
    let weight = vb.get(size, "weight")?;
    Ok(RmsNorm::new(weight, eps))
}

#[derive(Clone, Debug)]
pub struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f64,
}

impl LayerNorm {
    pub fn new(weight: Tensor, bias: Tensor, eps: f64) -> Self {
        Self { weight, bias, eps }
    }
}

impl Module for LayerNorm {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.layer_normalize(self.eps)?.broadcast_mul(&self.weight)?.broadcast_add(&self.bias)
    }
}

pub fn layer_norm(size: usize, eps: f64, vb: VarBuilder) -> Result<LayerNorm> {
    let weight = vb.get(size, "weight")?;
    let bias = vb.get(size, "bias")?;
    Ok(LayerNorm::new(weight, bias, eps))
}

pub mod ops {
    use candle::{Result, Tensor};
    pub fn silu(xs: &Tensor) -> Result<Tensor> {
        xs.silu()
    }
}
