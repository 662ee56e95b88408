//! A stand-in for candle-core, written for candle-graph's build check (not Hugging Face code):
//! the tensor API the `model` fixture uses, on small row-major f32 buffers, computed for real so
//! the profiler times work that happens.
use std::fmt;

#[derive(Debug, Clone)]
pub struct Error(pub String);
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Error {}
pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    F32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Cpu,
}

#[derive(Debug, Clone, Copy)]
pub enum D {
    Minus1,
}

/// A shape given as `n`, `(a, b)` or `(a, b, c)`.
pub trait Shape {
    fn dims(self) -> Vec<usize>;
}
impl Shape for usize {
    fn dims(self) -> Vec<usize> {
        vec![self]
    }
}
impl Shape for (usize, usize) {
    fn dims(self) -> Vec<usize> {
        vec![self.0, self.1]
    }
}
impl Shape for (usize, usize, usize) {
    fn dims(self) -> Vec<usize> {
        vec![self.0, self.1, self.2]
    }
}

#[derive(Debug, Clone)]
pub struct Tensor {
    dims: Vec<usize>,
    data: Vec<f32>,
}

impl Tensor {
    pub fn from_vec<S: Shape>(data: Vec<f32>, shape: S, _device: &Device) -> Result<Self> {
        let dims = shape.dims();
        if dims.iter().product::<usize>() != data.len() {
            return Err(Error(format!("{} values for shape {:?}", data.len(), dims)));
        }
        Ok(Self { dims, data })
    }
    pub fn zeros<S: Shape>(shape: S, _dtype: DType, _device: &Device) -> Result<Self> {
        let dims = shape.dims();
        let n = dims.iter().product();
        Ok(Self { dims, data: vec![0.0; n] })
    }
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }
    pub fn to_vec1(&self) -> Result<Vec<f32>> {
        Ok(self.data.clone())
    }
    fn last(&self) -> usize {
        *self.dims.last().unwrap_or(&1)
    }
    fn map(&self, f: impl Fn(f32) -> f32) -> Result<Tensor> {
        Ok(Tensor { dims: self.dims.clone(), data: self.data.iter().map(|&v| f(v)).collect() })
    }
    fn zip(&self, o: &Tensor, f: impl Fn(f32, f32) -> f32) -> Result<Tensor> {
        // Same shape, or `o` broadcast along the leading dimensions (a bias, a norm's weight).
        let n = o.data.len();
        if n == 0 || self.data.len() % n != 0 {
            return Err(Error(format!("shapes {:?} and {:?} do not broadcast", self.dims, o.dims)));
        }
        let data = self.data.iter().enumerate().map(|(i, &v)| f(v, o.data[i % n])).collect();
        Ok(Tensor { dims: self.dims.clone(), data })
    }
    /// `self` (.., k) times `w` (n, k) transposed: (.., n).
    pub fn matmul_t(&self, w: &Tensor) -> Result<Tensor> {
        let k = self.last();
        if w.dims.len() != 2 || w.dims[1] != k {
            return Err(Error(format!("matmul of {:?} by {:?}ᵀ", self.dims, w.dims)));
        }
        let n = w.dims[0];
        let rows = self.data.len() / k.max(1);
        let mut data = vec![0.0f32; rows * n];
        for r in 0..rows {
            for j in 0..n {
                let mut acc = 0.0;
                for i in 0..k {
                    acc += self.data[r * k + i] * w.data[j * k + i];
                }
                data[r * n + j] = acc;
            }
        }
        let mut dims = self.dims.clone();
        *dims.last_mut().unwrap() = n;
        Ok(Tensor { dims, data })
    }
    pub fn broadcast_add(&self, o: &Tensor) -> Result<Tensor> {
        self.zip(o, |a, b| a + b)
    }
    pub fn broadcast_mul(&self, o: &Tensor) -> Result<Tensor> {
        self.zip(o, |a, b| a * b)
    }
    pub fn exp(&self) -> Result<Tensor> {
        self.map(f32::exp)
    }
    pub fn tanh(&self) -> Result<Tensor> {
        self.map(f32::tanh)
    }
    pub fn silu(&self) -> Result<Tensor> {
        self.map(|v| v / (1.0 + (-v).exp()))
    }
    pub fn relu(&self) -> Result<Tensor> {
        self.map(|v| v.max(0.0))
    }
    pub fn affine(&self, mul: f64, add: f64) -> Result<Tensor> {
        self.map(|v| v * mul as f32 + add as f32)
    }
    /// Row-wise softmax over the last dimension.
    pub fn softmax_last_dim(&self) -> Result<Tensor> {
        let k = self.last().max(1);
        let mut data = self.data.clone();
        for row in data.chunks_mut(k) {
            let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let mut s = 0.0;
            for v in row.iter_mut() {
                *v = (*v - m).exp();
                s += *v;
            }
            for v in row.iter_mut() {
                *v /= s;
            }
        }
        Ok(Tensor { dims: self.dims.clone(), data })
    }
    /// Row-wise `x / sqrt(mean(x²) + eps)`.
    pub fn rms_normalize(&self, eps: f64) -> Result<Tensor> {
        let k = self.last().max(1);
        let mut data = self.data.clone();
        for row in data.chunks_mut(k) {
            let ms = row.iter().map(|v| v * v).sum::<f32>() / k as f32;
            let d = (ms + eps as f32).sqrt();
            for v in row.iter_mut() {
                *v /= d;
            }
        }
        Ok(Tensor { dims: self.dims.clone(), data })
    }
    /// Row-wise `(x - mean) / sqrt(var + eps)`.
    pub fn layer_normalize(&self, eps: f64) -> Result<Tensor> {
        let k = self.last().max(1);
        let mut data = self.data.clone();
        for row in data.chunks_mut(k) {
            let mean = row.iter().sum::<f32>() / k as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / k as f32;
            let d = (var + eps as f32).sqrt();
            for v in row.iter_mut() {
                *v = (*v - mean) / d;
            }
        }
        Ok(Tensor { dims: self.dims.clone(), data })
    }
    /// Rows of `table` (v, h) picked by the ids in `self`: (.., h).
    pub fn gather_rows(&self, table: &Tensor) -> Result<Tensor> {
        let h = table.last();
        let mut data = Vec::with_capacity(self.data.len() * h);
        for &id in &self.data {
            let r = id as usize;
            if r >= table.dims[0] {
                return Err(Error(format!("id {r} out of {} rows", table.dims[0])));
            }
            data.extend_from_slice(&table.data[r * h..(r + 1) * h]);
        }
        let mut dims = self.dims.clone();
        dims.push(h);
        Ok(Tensor { dims, data })
    }
    pub fn apply<M: Module>(&self, m: &M) -> Result<Tensor> {
        m.forward(self)
    }
    pub fn apply_t<M: ModuleT>(&self, m: &M, train: bool) -> Result<Tensor> {
        m.forward_t(self, train)
    }
}

impl std::ops::Add<Tensor> for Tensor {
    type Output = Result<Tensor>;
    fn add(self, o: Tensor) -> Result<Tensor> {
        self.zip(&o, |a, b| a + b)
    }
}
impl std::ops::Add<&Tensor> for &Tensor {
    type Output = Result<Tensor>;
    fn add(self, o: &Tensor) -> Result<Tensor> {
        self.zip(o, |a, b| a + b)
    }
}
impl std::ops::Mul<Tensor> for Tensor {
    type Output = Result<Tensor>;
    fn mul(self, o: Tensor) -> Result<Tensor> {
        self.zip(&o, |a, b| a * b)
    }
}

pub trait Module {
    fn forward(&self, xs: &Tensor) -> Result<Tensor>;
}

pub trait ModuleT {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Result<Tensor>;
}

impl<M: Module> ModuleT for M {
    fn forward_t(&self, xs: &Tensor, _train: bool) -> Result<Tensor> {
        self.forward(xs)
    }
}
