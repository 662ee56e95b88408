//! Stand-in for candle-transformers' `whisper/audio.rs` (the mel spectrogram, plain Rust, no
//! module): the build check feeds the encoder mel features directly.
