//! Answers as bytes: the response envelope ([`envelope`]), charts ([`chart`]), the frame of HTML pages ([`html`]), catalog resources as JSON values
//! ([`resources`]), the encoders of every format ([`encode`]), time formatting ([`timefmt`]),
//! and the OpenAPI document and JSON Schemas served as they are ([`schemas`]).

pub mod chart;
pub mod encode;
pub mod envelope;
pub mod html;
pub mod reply;
pub mod resources;
pub mod schemas;
pub mod station_list;
pub mod stream;
pub mod timefmt;
pub mod values;
