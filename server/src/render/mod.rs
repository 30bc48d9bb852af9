//! Every body, made of what a handler planned: the reply a handler returns ([`reply`]), the
//! response envelope ([`envelope`]), catalog resources as JSON values ([`resources`]), the
//! formats, one file each ([`format`](mod@format)), the machinery their encoders share ([`encode`]), value
//! answers streamed through them ([`values`], [`stream`]), long station lists
//! ([`station_list`]), charts ([`chart`]), HTML pages ([`html`]), time formatting
//! ([`timefmt`]), the bytes they all append ([`out`]), and the OpenAPI document and JSON
//! Schemas served as they are ([`schemas`]).

pub mod chart;
pub mod encode;
pub mod envelope;
pub mod format;
pub mod html;
pub mod out;
pub mod reply;
pub mod resources;
pub mod schemas;
pub mod station_list;
pub mod stream;
pub mod timefmt;
pub mod values;
