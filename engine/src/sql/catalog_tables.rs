//! The catalog as SQL tables: `stations`, `parameters`, `characteristics`, one row per item,
//! columns in snake_case so that no identifier needs quoting. Made once per dataset version
//! from the catalog in memory (a few MB for 100 000 stations) and shared by its queries.

use crate::catalog::Catalog;
use crate::dataset::layout::UTC;
use crate::error::Result;
use datafusion::arrow::array::{
    ArrayRef, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::catalog::MemTable;
use std::sync::Arc;

/// A table's columns, each a name and its values.
struct Columns(Vec<(&'static str, ArrayRef)>);

impl Columns {
    fn text<'a>(mut self, name: &'static str, v: impl Iterator<Item = Option<&'a str>>) -> Self {
        self.0.push((name, Arc::new(v.collect::<StringArray>())));
        self
    }

    fn number(mut self, name: &'static str, v: impl Iterator<Item = Option<f64>>) -> Self {
        self.0.push((name, Arc::new(v.collect::<Float64Array>())));
        self
    }

    fn time(mut self, name: &'static str, v: impl Iterator<Item = Option<i64>>) -> Self {
        let times = v.collect::<TimestampMicrosecondArray>().with_timezone(UTC);
        self.0.push((name, Arc::new(times)));
        self
    }

    fn table(self) -> Result<MemTable> {
        let fields: Vec<Field> = self
            .0
            .iter()
            .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            self.0.into_iter().map(|c| c.1).collect(),
        )?;
        Ok(MemTable::try_new(schema, vec![vec![batch]])?)
    }
}

fn columns() -> Columns {
    Columns(Vec::new())
}

/// `stations(id, name, type, state, operator, water_body_id, water_body_name, lat, lon,
/// river_km, gauge_zero, gauge_zero_unit, gauge_zero_datum, ground_level, elevation)`.
pub(crate) fn stations(catalog: &Catalog) -> Result<MemTable> {
    let s = catalog.stations();
    let zero = |f: fn(&crate::model::GaugeZero) -> Option<&str>| {
        s.iter().map(move |x| x.gauge_zero.as_ref().and_then(f))
    };
    columns()
        .text("id", s.iter().map(|x| Some(x.id.as_str())))
        .text("name", s.iter().map(|x| Some(x.name.as_str())))
        .text("type", s.iter().map(|x| Some(x.kind.as_str())))
        .text("state", s.iter().map(|x| Some(&*x.state)))
        .text("operator", s.iter().map(|x| Some(&*x.operator)))
        .text("water_body_id", s.iter().map(|x| Some(&*x.water_body_id)))
        .text(
            "water_body_name",
            s.iter().map(|x| Some(&*x.water_body_name)),
        )
        .number("lat", s.iter().map(|x| Some(x.coordinates.lat)))
        .number("lon", s.iter().map(|x| Some(x.coordinates.lon)))
        .number("river_km", s.iter().map(|x| x.river_km))
        .number(
            "gauge_zero",
            s.iter().map(|x| x.gauge_zero.as_ref().map(|g| g.value)),
        )
        .text("gauge_zero_unit", zero(|g| Some(&*g.unit)))
        .text("gauge_zero_datum", zero(|g| Some(&*g.datum)))
        .number("ground_level", s.iter().map(|x| x.ground_level))
        .number("elevation", s.iter().map(|x| x.elevation))
        .table()
}

/// `parameters(station, id, name, observed_property, unit, interval, first, last)`: `first`
/// and `last` the first and last time with values (the availability's ends).
pub(crate) fn parameters(catalog: &Catalog) -> Result<MemTable> {
    let p: Vec<_> = catalog
        .stations()
        .iter()
        .flat_map(|s| catalog.parameters(&s.id))
        .collect();
    columns()
        .text("station", p.iter().map(|x| Some(x.station.as_str())))
        .text("id", p.iter().map(|x| Some(x.id.as_str())))
        .text("name", p.iter().map(|x| Some(&*x.name)))
        .text(
            "observed_property",
            p.iter().map(|x| Some(&*x.observed_property)),
        )
        .text("unit", p.iter().map(|x| Some(&*x.unit)))
        .text("interval", p.iter().map(|x| Some(&*x.interval)))
        .time(
            "first",
            p.iter().map(|x| x.availability.first().map(|a| a.start)),
        )
        .time(
            "last",
            p.iter().map(|x| x.availability.last().map(|a| a.end)),
        )
        .table()
}

/// `characteristics(station, id, name, type, parameter, value, unit, period_start,
/// period_end, description)`.
pub(crate) fn characteristics(catalog: &Catalog) -> Result<MemTable> {
    let c: Vec<_> = catalog
        .stations()
        .iter()
        .flat_map(|s| catalog.characteristics(&s.id))
        .collect();
    columns()
        .text("station", c.iter().map(|x| Some(x.station.as_str())))
        .text("id", c.iter().map(|x| Some(x.id.as_str())))
        .text("name", c.iter().map(|x| Some(&*x.name)))
        .text("type", c.iter().map(|x| Some(x.kind.as_str())))
        .text("parameter", c.iter().map(|x| Some(x.parameter.as_str())))
        .number("value", c.iter().map(|x| Some(x.value)))
        .text("unit", c.iter().map(|x| Some(&*x.unit)))
        .time("period_start", c.iter().map(|x| x.period.map(|p| p.start)))
        .time("period_end", c.iter().map(|x| x.period.map(|p| p.end)))
        .text("description", c.iter().map(|x| x.description.as_deref()))
        .table()
}
