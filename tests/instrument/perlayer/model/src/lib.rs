//! A small llama-shaped model on the stand-in Candle API (`../candle-core`, `../candle-nn`): the
//! fixture of tests/e2e/instrument_build.sh. Its module types hide their forwards the way real
//! Candle models do (private `fn forward`, a `pub(crate)` method with another name, a private
//! `impl Module`), and it holds candle-nn layers and a crate-local wrapper that instrument cannot
//! edit, so every per-layer case of `candle-graph instrument` is compiled and run.
use candle::{Module, Result, Tensor};
use candle_nn::{embedding, linear_no_bias, rms_norm, Embedding, Linear, RmsNorm, VarBuilder};

pub mod traced;
use traced::{traced_linear, TracedLinear};

#[derive(Debug, Clone)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub rms_norm_eps: f64,
}

impl Config {
    pub fn tiny() -> Self {
        Self {
            vocab_size: 32,
            hidden_size: 16,
            intermediate_size: 40,
            num_hidden_layers: 2,
            rms_norm_eps: 1e-5,
        }
    }
}

struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o: TracedLinear,
}

impl Attention {
    fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let h = cfg.hidden_size;
        Ok(Self {
            q_proj: linear_no_bias(h, h, vb.pp("q_proj"))?,
            k_proj: linear_no_bias(h, h, vb.pp("k_proj"))?,
            v_proj: linear_no_bias(h, h, vb.pp("v_proj"))?,
            o: traced_linear(h, h, vb.pp("o_proj"))?,
        })
    }

    // Not `forward`: the block calls it by this name.
    pub(crate) fn attend(&self, x: &Tensor) -> Result<Tensor> {
        let q = self.q_proj.forward(x)?;
        let k = self.k_proj.forward(x)?;
        let v = self.v_proj.forward(x)?;
        let scores = (q * k)?.softmax_last_dim()?;
        let y = (scores * v)?;
        self.o.forward(&y)
    }
}

struct Mlp {
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
}

impl Mlp {
    fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let gate_proj = linear_no_bias(h, i, vb.pp("gate_proj"))?;
        let up_proj = linear_no_bias(h, i, vb.pp("up_proj"))?;
        let down_proj = linear_no_bias(i, h, vb.pp("down_proj"))?;
        Ok(Self { gate_proj, up_proj, down_proj })
    }
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let gate = candle_nn::ops::silu(&xs.apply(&self.gate_proj)?)?;
        (gate * xs.apply(&self.up_proj)?)?.apply(&self.down_proj)
    }
}

struct Block {
    attn: Attention,
    mlp: Mlp,
    ln1: RmsNorm,
    ln2: RmsNorm,
}

impl Block {
    fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            attn: Attention::new(cfg, vb.pp("self_attn"))?,
            mlp: Mlp::new(cfg, vb.pp("mlp"))?,
            ln1: rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("input_layernorm"))?,
            ln2: rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("post_attention_layernorm"))?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let residual = x;
        let h = self.ln1.forward(x)?;
        let x = (self.attn.attend(&h)? + residual.clone())?;
        let h = self.mlp.forward(&self.ln2.forward(&x)?)?;
        h + x
    }
}

pub struct Model {
    embed_tokens: Embedding,
    layers: Vec<Block>,
    norm: RmsNorm,
    lm_head: Linear,
}

impl Model {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let vb_m = vb.pp("model");
        let embed_tokens = embedding(cfg.vocab_size, cfg.hidden_size, vb_m.pp("embed_tokens"))?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        let vb_l = vb_m.pp("layers");
        for i in 0..cfg.num_hidden_layers {
            layers.push(Block::new(cfg, vb_l.pp(i))?);
        }
        let norm = rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb_m.pp("norm"))?;
        let lm_head = linear_no_bias(cfg.hidden_size, cfg.vocab_size, vb.pp("lm_head"))?;
        Ok(Self { embed_tokens, layers, norm, lm_head })
    }

    pub fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let mut x = self.embed_tokens.forward(ids)?;
        for layer in self.layers.iter() {
            x = layer.forward(&x)?;
        }
        self.lm_head.forward(&self.norm.forward(&x)?)
    }
}
