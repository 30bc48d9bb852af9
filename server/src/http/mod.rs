//! HTTP mechanics that know nothing of the API or the dataset.

pub mod access;
pub mod body;
pub mod client;
pub mod compress;
pub mod conditional;
pub mod cors;
pub mod error;
pub mod negotiate;
pub mod range;
pub mod ratelimit;
pub mod request_log;
