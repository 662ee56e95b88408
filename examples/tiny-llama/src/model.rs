use candle::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{embedding, linear_no_bias as linear, rms_norm, Embedding, Linear, RmsNorm, VarBuilder};

use crate::config::Config;
use crate::rotary::{causal_mask, RotaryEmbedding};

/// Grouped-query self-attention with a key/value cache for incremental decoding.
#[derive(Debug, Clone)]
pub struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
    kv_cache: Option<(Tensor, Tensor)>,
    span: tracing::Span,
}

impl Attention {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let span = tracing::span!(tracing::Level::TRACE, "attn");
        let hidden = cfg.hidden_size;
        let head_dim = cfg.head_dim();
        let num_heads = cfg.num_attention_heads;
        let num_kv_heads = cfg.num_key_value_heads();
        #[cfg(feature = "qkv-bias")]
        let q_proj = candle_nn::linear(hidden, num_heads * head_dim, vb.pp("q_proj"))?;
        #[cfg(not(feature = "qkv-bias"))]
        let q_proj = linear(hidden, num_heads * head_dim, vb.pp("q_proj"))?;
        let k_proj = linear(hidden, num_kv_heads * head_dim, vb.pp("k_proj"))?;
        let v_proj = linear(hidden, num_kv_heads * head_dim, vb.pp("v_proj"))?;
        let o_proj = linear(num_heads * head_dim, hidden, vb.pp("o_proj"))?;
        Ok(Self {
            q_proj,
            k_proj,
            v_proj,
            o_proj,
            num_heads,
            num_kv_heads,
            head_dim,
            kv_cache: None,
            span,
        })
    }

    fn repeat_kv(&self, xs: Tensor) -> Result<Tensor> {
        let n_rep = self.num_heads / self.num_kv_heads;
        if n_rep == 1 {
            return Ok(xs);
        }
        let (b, n_kv, t, d) = xs.dims4()?;
        xs.unsqueeze(2)?
            .expand((b, n_kv, n_rep, t, d))?
            .reshape((b, n_kv * n_rep, t, d))
    }

    pub fn forward(
        &mut self,
        xs: &Tensor,
        rotary: &RotaryEmbedding,
        mask: Option<&Tensor>,
        index_pos: usize,
    ) -> Result<Tensor> {
        let _enter = self.span.enter();
        let (b, t, _hidden) = xs.dims3()?;
        let q = self.q_proj.forward(xs)?;
        let k = self.k_proj.forward(xs)?;
        let v = self.v_proj.forward(xs)?;

        let q = q.reshape((b, t, self.num_heads, self.head_dim))?.transpose(1, 2)?;
        let k = k.reshape((b, t, self.num_kv_heads, self.head_dim))?.transpose(1, 2)?;
        let v = v
            .reshape((b, t, self.num_kv_heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let (q, k) = rotary.apply(&q, &k, index_pos)?;

        let (k, v) = match &self.kv_cache {
            None => (k, v),
            Some((prev_k, prev_v)) => {
                let k = Tensor::cat(&[prev_k, &k], 2)?;
                let v = Tensor::cat(&[prev_v, &v], 2)?;
                (k, v)
            }
        };
        self.kv_cache = Some((k.clone(), v.clone()));

        let k = self.repeat_kv(k)?;
        let v = self.repeat_kv(v)?;
        let scale = 1f64 / (self.head_dim as f64).sqrt();
        let att = (q.matmul(&k.t()?)? * scale)?;
        let att = match mask {
            None => att,
            Some(mask) => att.broadcast_add(mask)?,
        };
        let att = candle_nn::ops::softmax_last_dim(&att)?;
        let ys = att.matmul(&v.contiguous()?)?;
        let ys = ys.transpose(1, 2)?.reshape((b, t, self.num_heads * self.head_dim))?;
        self.o_proj.forward(&ys)
    }

    pub fn clear_kv_cache(&mut self) {
        self.kv_cache = None;
    }
}

/// SwiGLU feed-forward network.
#[derive(Debug, Clone)]
pub struct Mlp {
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
    span: tracing::Span,
}

impl Mlp {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let span = tracing::span!(tracing::Level::TRACE, "mlp");
        let h = cfg.hidden_size;
        let i = cfg.intermediate_size;
        Ok(Self {
            gate_proj: linear(h, i, vb.pp("gate_proj"))?,
            up_proj: linear(h, i, vb.pp("up_proj"))?,
            down_proj: linear(i, h, vb.pp("down_proj"))?,
            span,
        })
    }
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let _enter = self.span.enter();
        let gate = candle_nn::ops::silu(&self.gate_proj.forward(xs)?)?;
        let up = self.up_proj.forward(xs)?;
        self.down_proj.forward(&(gate * up)?)
    }
}

/// One pre-norm decoder block.
#[derive(Debug, Clone)]
pub struct Block {
    input_layernorm: RmsNorm,
    self_attn: Attention,
    post_attention_layernorm: RmsNorm,
    mlp: Mlp,
    span: tracing::Span,
}

impl Block {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let span = tracing::span!(tracing::Level::TRACE, "block");
        let input_layernorm = rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("input_layernorm"))?;
        let self_attn = Attention::new(cfg, vb.pp("self_attn"))?;
        let post_attention_layernorm =
            rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("post_attention_layernorm"))?;
        let mlp = Mlp::new(cfg, vb.pp("mlp"))?;
        Ok(Self {
            input_layernorm,
            self_attn,
            post_attention_layernorm,
            mlp,
            span,
        })
    }

    pub fn forward(
        &mut self,
        xs: &Tensor,
        rotary: &RotaryEmbedding,
        mask: Option<&Tensor>,
        index_pos: usize,
    ) -> Result<Tensor> {
        let _enter = self.span.enter();
        let residual = xs;
        let h = self.input_layernorm.forward(xs)?;
        let h = self.self_attn.forward(&h, rotary, mask, index_pos)?;
        let xs = (h + residual)?;
        let residual = &xs;
        let h = self.post_attention_layernorm.forward(&xs)?;
        let h = self.mlp.forward(&h)?;
        h + residual
    }
}

/// The decoder-only language model.
#[derive(Debug, Clone)]
pub struct TinyLlama {
    embed_tokens: Embedding,
    layers: Vec<Block>,
    norm: RmsNorm,
    lm_head: Linear,
    rotary: RotaryEmbedding,
    device: Device,
    span: tracing::Span,
}

impl TinyLlama {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let span = tracing::span!(tracing::Level::TRACE, "model");
        let vb_m = vb.pp("model");
        let embed_tokens = embedding(cfg.vocab_size, cfg.hidden_size, vb_m.pp("embed_tokens"))?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        let vb_l = vb_m.pp("layers");
        for layer_idx in 0..cfg.num_hidden_layers {
            layers.push(Block::new(cfg, vb_l.pp(format!("{layer_idx}")))?);
        }
        let norm = rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb_m.pp("norm"))?;
        let lm_head = if cfg.tie_word_embeddings {
            Linear::new(embed_tokens.embeddings().clone(), None)
        } else {
            linear(cfg.hidden_size, cfg.vocab_size, vb.pp("lm_head"))?
        };
        let rotary = RotaryEmbedding::new(vb.dtype(), cfg, vb.device())?;
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            lm_head,
            rotary,
            device: vb.device().clone(),
            span,
        })
    }

    /// Runs the decoder over `input_ids` (batch, seq) starting at cache position `index_pos`;
    /// returns the logits of the last position (batch, vocab).
    pub fn forward(&mut self, input_ids: &Tensor, index_pos: usize) -> Result<Tensor> {
        let _enter = self.span.enter();
        let (_b, seq_len) = input_ids.dims2()?;
        let mask = if seq_len <= 1 {
            None
        } else {
            Some(causal_mask(seq_len, index_pos, &self.device)?)
        };
        let mut xs = self.embed_tokens.forward(input_ids)?;
        for layer in self.layers.iter_mut() {
            xs = layer.forward(&xs, &self.rotary, mask.as_ref(), index_pos)?;
        }
        let xs = self.norm.forward(&xs)?;
        let xs = xs.narrow(1, seq_len - 1, 1)?.squeeze(1)?;
        self.lm_head.forward(&xs)?.to_dtype(DType::F32)
    }

    /// Logits for every position (batch, seq, vocab), used by training.
    pub fn forward_all(&mut self, input_ids: &Tensor) -> Result<Tensor> {
        let _enter = self.span.enter();
        let (_b, seq_len) = input_ids.dims2()?;
        let mask = causal_mask(seq_len, 0, &self.device)?;
        let mut xs = self.embed_tokens.forward(input_ids)?;
        for layer in self.layers.iter_mut() {
            xs = layer.forward(&xs, &self.rotary, Some(&mask), 0)?;
        }
        let xs = self.norm.forward(&xs)?;
        self.lm_head.forward(&xs)?.to_dtype(DType::F32)
    }

    pub fn clear_kv_cache(&mut self) {
        for layer in self.layers.iter_mut() {
            layer.self_attn.clear_kv_cache();
        }
    }

    pub fn last_hidden_dim(&self) -> Result<usize> {
        self.lm_head.weight().dim(D::Minus1)
    }
}
