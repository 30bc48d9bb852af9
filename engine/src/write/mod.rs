//! Datasets written: the writer every publish goes through ([`writer`]), CSV import
//! ([`import`]) and the synthetic generator ([`generate`], with real gauge names from
//! [`gauges`]). A publish writes value and catalog files under new names first and the
//! manifest last, so readers never see half of it.

pub(crate) mod gauges;
pub mod generate;
pub mod import;
pub mod writer;
