//! Tests across the engine's modules, each against an independent oracle: the planner against
//! a brute-force reading of the same files, appends against the path that decodes every file,
//! rollups against the raw values, latest values against the values, the streaming aggregator
//! against DataFusion.

mod aggregate_reference;
mod append;
mod latest;
mod planner;
mod rollups;
