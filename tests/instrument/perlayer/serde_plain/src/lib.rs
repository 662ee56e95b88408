//! A stand-in for serde_plain, written for candle-graph's build check (not that crate's code): a
//! plain string parsed into a value, here through `FromStr`.
#[derive(Debug)]
pub struct Error(pub String);
impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Error {}

pub fn from_str<T: std::str::FromStr>(s: &str) -> Result<T, Error>
where
    T::Err: std::fmt::Display,
{
    s.parse().map_err(|e: T::Err| Error(e.to_string()))
}
