//! The Hydro API HTTP service on hyper 1.x: routing, parameters, negotiation, encoders,
//! compression, caching and CORS. It knows nothing of Parquet paths: all data comes from
//! `hydro_engine`.

pub mod access;
pub mod answers;
pub mod app;
pub mod body;
pub mod compress;
pub mod config;
pub mod download;
pub mod encode;
pub mod envelope;
pub mod error;
pub mod handlers;
pub mod negotiate;
pub mod params;
pub mod range;
pub mod ratelimit;
pub mod resources;
pub mod schemas;
pub mod server;
pub mod station_list;
pub mod timefmt;
