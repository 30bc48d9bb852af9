//! The Hydro API HTTP service on hyper 1.x. It knows nothing of storage paths: all data comes
//! from `hydro_engine`.
//!
//! Modules from the bottom up; each uses only those above it in this list:
//!
//! - [`config`]: the settings, defined once (TOML keys, `HYDRO_*` variables, defaults, help).
//! - [`http`]: HTTP mechanics that know nothing of the API: bodies, errors as RFC 9457
//!   problems, content negotiation, conditional requests, CORS, ranges, compression, access
//!   control, rate limits.
//! - [`render`]: every body, made of what a handler planned: the envelope, resources as JSON
//!   values, the encoders of every format, streamed values, station lists, charts, HTML pages,
//!   time and number formatting, the bundled schemas.
//! - [`answer_store`]: the answer store (finished value answers kept on disk and sent again).
//! - [`versions`]: the versions a request may be answered from: the one served, those opened
//!   for `asOf` (kept a while), and the list `/v1/versions` gives.
//! - [`state`]: what every request shares: the dataset, settings, caches, metrics.
//! - [`follow`]: switching the version served to a newer one published in the store, without a
//!   restart.
//! - [`api`]: the endpoints: routes, typed requests, one module per resource.
//! - [`ogc`]: OGC API – Features under `/ogc`: the catalog as collections of features for GIS
//!   clients.
//! - [`service`]: a request's way through the server: limits, access, conditional requests,
//!   the answer store, the endpoint, and the common headers on the way out.
//! - [`listener`]: accepting connections, timeouts, graceful shutdown.
//! - [`flight`]: Arrow Flight SQL on a port of its own: `/v1/sql`'s queries for gRPC clients.

pub mod answer_store;
pub mod api;
pub mod config;
pub mod flight;
pub mod follow;
pub mod http;
pub mod listener;
pub mod ogc;
pub mod render;
pub mod service;
pub mod state;
pub mod versions;
