//! Parquet below the Arrow reader, where measurement showed the reader's general path costs
//! more than the answer: a month file's footer split so that its row groups can be copied into
//! a Parquet answer byte for byte ([`assembly`], on a small [`thrift`] reader, beside
//! [`constant`] columns made for it), and pages decoded straight into Arrow arrays ([`pages`]). Everything else goes through the parquet
//! crate's Arrow reader, which stays the fallback for chunks of any other shape.

pub(crate) mod assembly;
pub(crate) mod constant;
pub(crate) mod pages;
pub(crate) mod thrift;
