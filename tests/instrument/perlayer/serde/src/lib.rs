//! A stand-in for serde, written for candle-graph's build check (not the serde project's code):
//! the models' configs derive `Deserialize`, which this build check never calls, so the derives
//! expand to nothing; the few traits a hand-written deserializer names (t5's
//! `deserialize_feed_forward_proj_activation`) exist with the same shape, reading strings only.
pub use serde_derive::{Deserialize, Serialize};

pub trait Deserialize<'de>: Sized {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

impl<'de> Deserialize<'de> for String {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_string()
    }
}

pub mod de {
    pub use super::Deserialize;
    pub trait Error: Sized + std::fmt::Display {
        fn custom<T: std::fmt::Display>(msg: T) -> Self;
    }
    pub trait Deserializer<'de>: Sized {
        type Error: Error;
        fn deserialize_string(self) -> Result<String, Self::Error>;
    }
}
