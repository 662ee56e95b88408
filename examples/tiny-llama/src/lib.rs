//! tiny-llama: a small Llama-style decoder-only language model for Candle.
//!
//! The model follows the structure of the Llama family: token embeddings, a stack of pre-norm
//! decoder blocks (grouped-query attention with rotary position embeddings and a KV cache, then a
//! SwiGLU MLP), a final RMS norm and a language-model head that may share the embedding matrix.

pub mod config;
pub mod model;
pub mod rotary;
pub mod train;

pub use config::Config;
pub use model::TinyLlama;
