//! The endpoints. Each handler checks the endpoint's parameters, resolves the path's ids in
//! the catalog, parses its typed request ([`request`]), plans the query, and hands what it
//! planned to `render`, which makes the body: once the status line is out, an error can only
//! cut the connection.
//!
//! [`router`] finds the endpoint of a path; [`context`] is what every handler works with.
//! One module per resource ([`landing`], [`health`], [`stations`], [`parameters`],
//! [`characteristics`], [`values`], [`many_series`], [`statistics`], [`latest`], [`versions`],
//! [`assets`]);
//! [`query_parameters`] defines every query parameter once (what takes it, its parser, its
//! OpenAPI description), [`params`] parses single values, [`chart`] plans the charts (`format=svg`, `png`),
//! [`changes`] the answers of `changedSince`; [`swapped`] hints at coordinates typed lat,lon; [`rows`] sends what a values-shaped answer
//! planned.
//! Handlers plan the HTML pages of their resources too, which `render::html::pages` makes.

pub mod assets;
pub mod changes;
pub mod characteristics;
pub mod chart;
pub mod context;
pub mod health;
pub mod landing;
pub mod latest;
pub mod many_series;
pub mod parameters;
pub mod params;
pub mod query_parameters;
pub mod request;
pub mod router;
pub mod rows;
pub mod sql;
pub mod stations;
pub mod statistics;
pub mod swapped;
pub mod values;
pub mod versions;

pub use context::Ctx;
pub use router::route;
