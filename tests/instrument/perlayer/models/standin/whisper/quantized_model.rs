//! Stand-in for candle-transformers' `whisper/quantized_model.rs`: the quantized variant is not
//! part of the build check (it needs candle's quantized tensors).
