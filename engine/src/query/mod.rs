//! Values queries: one series, a time window, an order, a page; or many series, one after
//! another ([`many_series`]).
//!
//! A request becomes a [`spec::ValuesQuery`], which [`plan`] turns into reads. Two paths:
//!
//! - **In time order** (ascending or descending, the default and by far the most common),
//!   months are read directly from their month files ([`months`]): a month wholly inside the
//!   window is decoded straight from its row group page by page, or, for a Parquet answer,
//!   copied as stored; a month cut by the window is decoded whole and cut in memory. No
//!   DataFusion plan is built: with ~3 000 rows per station-month, DataFusion's per-file scan
//!   setup cost more than the read itself (a tenth of a 10-year download's CPU time, and more
//!   than decoding the two or three pages a cut month has; measured with `benches/ab.py`).
//! - **Sorted by value or quality** (`sort=-value`, `sort=quality`), the answer goes through a
//!   DataFusion plan ([`sorted`]): a Parquet scan over exactly the month files of the window with
//!   the window as a typed predicate (row groups and pages outside it skipped), then a sort
//!   (top-k when a `limit` is given). Ordering a whole series by another column is what a
//!   query engine is for, and its per-file setup is small next to the sort.
//!
//! Either way totals, `offset` and `recent` are resolved by arithmetic over the per-month row
//! counts in the files table, so work stays proportional to the answer, not to the archive.
//! Values of some qualities only (`qualities=good`) cannot be counted so: `qualities` reads
//! the window and keeps what it finds.

pub(crate) mod aggregate;
pub(crate) mod changes;
pub(crate) mod latest;
pub(crate) mod many_series;
pub(crate) mod months;
mod object_read;
pub(crate) mod plan;
mod qualities;
pub(crate) mod sorted;
pub(crate) mod spec;
pub(crate) mod statistics;

pub use many_series::{ManyPlan, ManyQuery};
pub use months::{AnswerPart, StoredRowGroup};
pub use plan::ValuesPlan;
pub use spec::{ReadAhead, SortKey, ValueColumn, ValuesQuery, Window};
