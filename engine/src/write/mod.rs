//! Datasets written: the writer every publish goes through ([`writer`], with the rollups and
//! derived characteristic values each publish makes: `rollup`, `derived`), import of CSV and
//! Parquet, whole or appended ([`import`]), the synthetic generator ([`generate`], with real
//! gauge names from `gauges`), [`compact`], which joins settled months into station-year files, and
//! [`vacuum`], which removes what no recent version needs, and [`rollback`], which publishes an
//! earlier version again. A publish writes value, rollup and
//! catalog files under new names first and the manifest last, so readers never see half of it.

pub(crate) mod availability;
pub(crate) mod compact;
pub(crate) mod derived;
pub(crate) mod gauges;
pub(crate) mod generate;
pub(crate) mod import;
pub(crate) mod journal;
pub(crate) mod rollback;
pub(crate) mod rollup;
pub(crate) mod vacuum;
pub(crate) mod writer;
