//! A stand-in for candle-nn, written for candle-graph's build check (not Hugging Face code): a
//! VarBuilder that makes deterministic small weights from its key instead of reading a checkpoint,
//! and the layers the `model` fixture and the candle-transformers models of the build check hold.
//! The constructors ask the builder for the same keys and shapes as candle-nn's, so the analysis
//! sees the same parameters.
pub use candle::{Module, ModuleT};
use candle::{DType, Device, Result, Shape, Tensor};

#[derive(Clone)]
pub struct VarBuilder<'a> {
    path: Vec<String>,
    device: Device,
    dtype: DType,
    varmap: Option<VarMap>,
    _life: std::marker::PhantomData<&'a ()>,
}

/// The trainable variables by key (candle-nn's `VarMap`): a builder made with
/// `VarBuilder::from_varmap` creates each weight once, as a `Var`, and keeps it here.
#[derive(Clone, Default)]
pub struct VarMap {
    data: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, candle::Var>>>,
}
impl VarMap {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn data(&self) -> &std::sync::Mutex<std::collections::HashMap<String, candle::Var>> {
        &self.data
    }
    pub fn all_vars(&self) -> Vec<candle::Var> {
        self.data.lock().unwrap().values().cloned().collect()
    }
}

impl<'a> VarBuilder<'a> {
    /// Weights computed from each key: `0.1 * sin(hash(key) + i)`.
    pub fn deterministic(device: &Device) -> Self {
        Self { path: vec![], device: device.clone(), dtype: DType::F32, varmap: None, _life: std::marker::PhantomData }
    }
    /// Weights as `deterministic` makes them, each created once as a `Var` of `varmap`.
    pub fn from_varmap(varmap: &VarMap, dtype: DType, device: &Device) -> Self {
        Self { path: vec![], device: device.clone(), dtype, varmap: Some(varmap.clone()), _life: std::marker::PhantomData }
    }
    pub fn pp<S: ToString>(&self, s: S) -> Self {
        self.push_prefix(s)
    }
    pub fn push_prefix<S: ToString>(&self, s: S) -> Self {
        let mut path = self.path.clone();
        path.push(s.to_string());
        Self { path, ..self.clone() }
    }
    pub fn root(&self) -> Self {
        Self { path: vec![], ..self.clone() }
    }
    pub fn prefix(&self) -> String {
        self.path.join(".")
    }
    pub fn device(&self) -> &Device {
        &self.device
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn set_dtype(&self, dtype: DType) -> Self {
        Self { dtype, ..self.clone() }
    }
    pub fn to_dtype(&self, dtype: DType) -> Self {
        self.set_dtype(dtype)
    }
    /// Every key exists in this stand-in checkpoint.
    pub fn contains_tensor(&self, _name: &str) -> bool {
        true
    }
    pub fn get<S: Into<Shape>>(&self, s: S, name: &str) -> Result<Tensor> {
        let dims = s.into().dims().to_vec();
        let key = if self.path.is_empty() { name.to_string() } else { format!("{}.{name}", self.prefix()) };
        let seed = key.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32)) % 1000;
        let n: usize = dims.iter().product();
        let data: Vec<f32> = (0..n).map(|i| 0.1 * ((seed as usize + i) as f32).sin()).collect();
        let t = Tensor::from_vec(data, dims, &self.device)?.to_dtype(self.dtype)?;
        match &self.varmap {
            None => Ok(t),
            Some(map) => {
                let mut vars = map.data.lock().unwrap();
                let var = vars.entry(key).or_insert(candle::Var::from_tensor(&t)?);
                Ok(var.as_tensor().clone())
            }
        }
    }
    pub fn get_with_hints<S: Into<Shape>>(&self, s: S, name: &str, _hints: Init) -> Result<Tensor> {
        self.get(s, name)
    }
    pub fn get_with_hints_dtype<S: Into<Shape>>(&self, s: S, name: &str, _h: Init, dtype: DType) -> Result<Tensor> {
        self.get(s, name)?.to_dtype(dtype)
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Init {
    Const(f64),
    Randn { mean: f64, stdev: f64 },
    Uniform { lo: f64, up: f64 },
}
pub mod init {
    pub use super::Init;
    pub const ZERO: Init = Init::Const(0.);
    pub const ONE: Init = Init::Const(1.);
    pub const DEFAULT_KAIMING_NORMAL: Init = Init::Randn { mean: 0., stdev: 1. };
    pub const DEFAULT_KAIMING_UNIFORM: Init = Init::Uniform { lo: -1., up: 1. };
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
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
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

pub fn linear_b(in_dim: usize, out_dim: usize, bias: bool, vb: VarBuilder) -> Result<Linear> {
    if bias {
        linear(in_dim, out_dim, vb)
    } else {
        linear_no_bias(in_dim, out_dim, vb)
    }
}

#[derive(Clone, Debug)]
pub struct Embedding {
    embeddings: Tensor,
    hidden_size: usize,
}

impl Embedding {
    pub fn new(embeddings: Tensor, hidden_size: usize) -> Self {
        Self { embeddings, hidden_size }
    }
    pub fn embeddings(&self) -> &Tensor {
        &self.embeddings
    }
    pub fn hidden_size(&self) -> usize {
        self.hidden_size
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
    pub fn forward_diff(&self, xs: &Tensor) -> Result<Tensor> {
        self.forward(xs)
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

#[derive(Clone, Copy, Debug)]
pub struct LayerNormConfig {
    pub eps: f64,
    pub remove_mean: bool,
    pub affine: bool,
}
impl Default for LayerNormConfig {
    fn default() -> Self {
        Self { eps: 1e-5, remove_mean: true, affine: true }
    }
}
impl From<f64> for LayerNormConfig {
    fn from(eps: f64) -> Self {
        Self { eps, ..Default::default() }
    }
}

#[derive(Clone, Debug)]
pub struct LayerNorm {
    weight: Tensor,
    bias: Option<Tensor>,
    eps: f64,
}

impl LayerNorm {
    pub fn new(weight: Tensor, bias: Tensor, eps: f64) -> Self {
        Self { weight, bias: Some(bias), eps }
    }
    pub fn new_no_bias(weight: Tensor, eps: f64) -> Self {
        Self { weight, bias: None, eps }
    }
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }
}

impl Module for LayerNorm {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let y = xs.layer_normalize(self.eps)?.broadcast_mul(&self.weight)?;
        match &self.bias {
            None => Ok(y),
            Some(b) => y.broadcast_add(b),
        }
    }
}

pub fn layer_norm<C: Into<LayerNormConfig>>(size: usize, c: C, vb: VarBuilder) -> Result<LayerNorm> {
    let c = c.into();
    let weight = vb.get(size, "weight")?;
    if c.affine {
        let bias = vb.get(size, "bias")?;
        Ok(LayerNorm::new(weight, bias, c.eps))
    } else {
        Ok(LayerNorm::new_no_bias(weight, c.eps))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv1dConfig {
    pub padding: usize,
    pub stride: usize,
    pub dilation: usize,
    pub groups: usize,
    pub cudnn_fwd_algo: Option<u8>,
}
impl Default for Conv1dConfig {
    fn default() -> Self {
        Self { padding: 0, stride: 1, dilation: 1, groups: 1, cudnn_fwd_algo: None }
    }
}

#[derive(Clone, Debug)]
pub struct Conv1d {
    weight: Tensor,
    bias: Option<Tensor>,
    config: Conv1dConfig,
}
impl Conv1d {
    pub fn new(weight: Tensor, bias: Option<Tensor>, config: Conv1dConfig) -> Self {
        Self { weight, bias, config }
    }
    pub fn config(&self) -> &Conv1dConfig {
        &self.config
    }
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }
}
impl Module for Conv1d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let c = &self.config;
        let y = x.conv1d(&self.weight, c.padding, c.stride, c.dilation, c.groups)?;
        match &self.bias {
            None => Ok(y),
            Some(b) => y.broadcast_add(&b.reshape((b.dims()[0], 1))?),
        }
    }
}
pub fn conv1d(i: usize, o: usize, k: usize, cfg: Conv1dConfig, vb: VarBuilder) -> Result<Conv1d> {
    let w = vb.get((o, i / cfg.groups, k), "weight")?;
    let b = vb.get(o, "bias")?;
    Ok(Conv1d::new(w, Some(b), cfg))
}
pub fn conv1d_no_bias(i: usize, o: usize, k: usize, cfg: Conv1dConfig, vb: VarBuilder) -> Result<Conv1d> {
    let w = vb.get((o, i / cfg.groups, k), "weight")?;
    Ok(Conv1d::new(w, None, cfg))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dConfig {
    pub padding: usize,
    pub stride: usize,
    pub dilation: usize,
    pub groups: usize,
    pub cudnn_fwd_algo: Option<u8>,
}
impl Default for Conv2dConfig {
    fn default() -> Self {
        Self { padding: 0, stride: 1, dilation: 1, groups: 1, cudnn_fwd_algo: None }
    }
}

#[derive(Clone, Debug)]
pub struct Conv2d {
    weight: Tensor,
    bias: Option<Tensor>,
    config: Conv2dConfig,
}
impl Conv2d {
    pub fn new(weight: Tensor, bias: Option<Tensor>, config: Conv2dConfig) -> Self {
        Self { weight, bias, config }
    }
    pub fn config(&self) -> &Conv2dConfig {
        &self.config
    }
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }
}
impl Module for Conv2d {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let c = &self.config;
        let y = x.conv2d(&self.weight, c.padding, c.stride, c.dilation, c.groups)?;
        match &self.bias {
            None => Ok(y),
            Some(b) => y.broadcast_add(&b.reshape((b.dims()[0], 1, 1))?),
        }
    }
}
pub fn conv2d(i: usize, o: usize, k: usize, cfg: Conv2dConfig, vb: VarBuilder) -> Result<Conv2d> {
    let w = vb.get((o, i / cfg.groups, k, k), "weight")?;
    let b = vb.get(o, "bias")?;
    Ok(Conv2d::new(w, Some(b), cfg))
}
pub fn conv2d_no_bias(i: usize, o: usize, k: usize, cfg: Conv2dConfig, vb: VarBuilder) -> Result<Conv2d> {
    let w = vb.get((o, i / cfg.groups, k, k), "weight")?;
    Ok(Conv2d::new(w, None, cfg))
}
pub mod conv {
    pub use super::{conv1d, conv1d_no_bias, conv2d, conv2d_no_bias, Conv1d, Conv1dConfig, Conv2d, Conv2dConfig};
}

#[derive(Clone, Copy, Debug)]
pub struct BatchNormConfig {
    pub eps: f64,
    pub remove_mean: bool,
    pub affine: bool,
    pub momentum: f64,
}
impl From<f64> for BatchNormConfig {
    fn from(eps: f64) -> Self {
        Self { eps, remove_mean: true, affine: true, momentum: 0.1 }
    }
}
#[derive(Clone, Debug)]
pub struct BatchNorm {
    running_mean: Tensor,
    running_var: Tensor,
    weight: Tensor,
    bias: Tensor,
    eps: f64,
}
impl ModuleT for BatchNorm {
    fn forward_t(&self, x: &Tensor, _train: bool) -> Result<Tensor> {
        let c = self.running_mean.dims()[0];
        let s = (c, 1, 1);
        let inv = (self.running_var.affine(1.0, self.eps)?.sqrt()?.recip()? * &self.weight)?;
        x.broadcast_sub(&self.running_mean.reshape(s)?)?.broadcast_mul(&inv.reshape(s)?)?.broadcast_add(&self.bias.reshape(s)?)
    }
}
pub fn batch_norm<C: Into<BatchNormConfig>>(n: usize, c: C, vb: VarBuilder) -> Result<BatchNorm> {
    let c = c.into();
    Ok(BatchNorm {
        running_mean: vb.get(n, "running_mean")?,
        running_var: vb.get(n, "running_var")?.abs()?,
        weight: vb.get(n, "weight")?,
        bias: vb.get(n, "bias")?,
        eps: c.eps,
    })
}

/// A module made of a closure.
#[derive(Clone)]
pub struct Func<'a> {
    #[allow(clippy::type_complexity)]
    f: std::sync::Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'a>,
}
impl std::fmt::Debug for Func<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "func")
    }
}
impl<'a> Func<'a> {
    pub fn new<F>(f: F) -> Self
    where
        F: 'a + Fn(&Tensor) -> Result<Tensor> + Send + Sync,
    {
        Self { f: std::sync::Arc::new(f) }
    }
}
impl Module for Func<'_> {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        (*self.f)(xs)
    }
}
pub fn func<'a, F>(f: F) -> Func<'a>
where
    F: 'a + Fn(&Tensor) -> Result<Tensor> + Send + Sync,
{
    Func::new(f)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Activation {
    #[default]
    Gelu,
    NewGelu,
    Relu,
    Silu,
    Sigmoid,
    GeluPytorchTanh,
    Swiglu,
}
impl Module for Activation {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match self {
            Activation::Gelu => xs.gelu_erf(),
            Activation::NewGelu | Activation::GeluPytorchTanh => xs.gelu(),
            Activation::Relu => xs.relu(),
            Activation::Silu => xs.silu(),
            Activation::Sigmoid => ops::sigmoid(xs),
            Activation::Swiglu => {
                let c = xs.chunk(2, candle::D::Minus1)?;
                c[0].silu()? * &c[1]
            }
        }
    }
}

/// What `serde_plain::from_str` (a stand-in too) parses an activation's name with.
impl std::str::FromStr for Activation {
    type Err = candle::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "gelu" => Activation::Gelu,
            "gelu_new" | "new_gelu" => Activation::NewGelu,
            "gelu_pytorch_tanh" => Activation::GeluPytorchTanh,
            "relu" => Activation::Relu,
            "silu" | "swish" => Activation::Silu,
            "sigmoid" => Activation::Sigmoid,
            "swiglu" => Activation::Swiglu,
            _ => return Err(candle::Error(format!("unknown activation {s}"))),
        })
    }
}

#[derive(Clone, Debug)]
pub struct Dropout {
    _p: f32,
}
impl Dropout {
    pub fn new(p: f32) -> Self {
        Self { _p: p }
    }
    pub fn forward(&self, xs: &Tensor, _train: bool) -> Result<Tensor> {
        Ok(xs.clone())
    }
}
impl ModuleT for Dropout {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Result<Tensor> {
        self.forward(xs, train)
    }
}

pub mod ops {
    use candle::{Dim, Result, Tensor};
    pub fn silu(xs: &Tensor) -> Result<Tensor> {
        xs.silu()
    }
    pub fn sigmoid(xs: &Tensor) -> Result<Tensor> {
        xs.neg()?.exp()?.affine(1.0, 1.0)?.recip()
    }
    pub fn softmax_last_dim(xs: &Tensor) -> Result<Tensor> {
        xs.softmax_last_dim()
    }
    pub fn softmax<D: Dim>(xs: &Tensor, dim: D) -> Result<Tensor> {
        let max = xs.max_keepdim(dim)?;
        let e = xs.broadcast_sub(&max)?.exp()?;
        e.broadcast_div(&e.sum_keepdim(dim)?)
    }
    pub fn log_softmax<D: Dim>(xs: &Tensor, dim: D) -> Result<Tensor> {
        softmax(xs, dim)?.log()
    }
}

pub mod rotary_emb {
    use candle::{Result, Tensor, D};
    /// Rotary embedding of `x` (b, h, t, d) by `cos`/`sin` (t, d/2), non-interleaved halves.
    pub fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        let d = x.dim(D::Minus1)?;
        let x1 = x.narrow(D::Minus1, 0, d / 2)?;
        let x2 = x.narrow(D::Minus1, d / 2, d / 2)?;
        let c = Tensor::cat(&[cos, cos], D::Minus1)?;
        let s = Tensor::cat(&[sin, sin], D::Minus1)?;
        let rot = Tensor::cat(&[&x2.neg()?, &x1], D::Minus1)?;
        x.broadcast_mul(&c)? + rot.broadcast_mul(&s)?
    }
    pub fn rope_i(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        rope(x, cos, sin)
    }
}
