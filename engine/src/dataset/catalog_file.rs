//! The catalog tables as Parquet: stations, parameters, characteristics. Small files, read
//! whole at start; columns are flat (nested fields are spelled out) so any Parquet reader
//! understands them.

use crate::dataset::layout::{UTC, writer_properties};
use crate::error::{EngineError, Result};
use crate::model::ids::{CharacteristicId, ParameterId, SharedId, StationId};
use crate::model::{
    Characteristic, Coordinates, GaugeZero, Latest, Parameter, Period, Station, Text,
};
use bytes::Bytes;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, ListArray, ListBuilder, RecordBatch, StringArray,
    StructBuilder, TimestampMicrosecondArray, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Fields, TimeUnit, TimestampMicrosecondType};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::HashSet;
use std::str::FromStr;
use std::sync::Arc;

fn ts_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into()))
}

fn period_fields() -> Fields {
    Fields::from(vec![
        Field::new("start", ts_type(), false),
        Field::new("end", ts_type(), false),
    ])
}

fn strings<'a>(it: impl Iterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(it))
}

fn opt_strings<'a>(it: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(it.collect::<StringArray>())
}

fn floats(it: impl Iterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(it.collect::<Float64Array>())
}

fn micros(it: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(it.collect::<TimestampMicrosecondArray>().with_timezone(UTC))
}

fn to_parquet(batch: RecordBatch) -> Result<Bytes> {
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, batch.schema(), Some(writer_properties()))?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(Bytes::from(buf))
}

/// The file's rows (how many), and its batches one at a time, of 1 024 rows: what a batch
/// allocates is freed between the catalog's own strings, and the allocator keeps pages such
/// holes leave. A catalog of 100 000 stations decoded whole before conversion was tens of MB
/// kept after loading; batches of 8 192 rows, 21 MB more than batches of 1 024.
pub(super) fn from_parquet(
    bytes: Bytes,
    what: &str,
) -> Result<(usize, impl Iterator<Item = Result<RecordBatch>>)> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| EngineError::corrupt_by(what.to_owned(), e))?;
    let rows = usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let reader = builder
        .with_batch_size(1024)
        .build()
        .map_err(|e| EngineError::corrupt_by(what.to_owned(), e))?;
    let what = what.to_owned();
    Ok((
        rows,
        reader.map(move |b| b.map_err(|e| EngineError::corrupt_by(what.to_owned(), e))),
    ))
}

/// An empty vector with room for the rows a footer declares; a footer declaring more than
/// can be allocated is a broken file, not a reason to abort.
pub(super) fn room_for<T>(rows: usize, what: &str) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(rows)
        .map_err(|_| EngineError::corrupt(format!("{what}: {rows} rows declared")))?;
    Ok(out)
}

/// Looks a column up by name with the expected type, so a foreign file fails with a message.
pub(super) fn column<'a, T: 'static>(
    batch: &'a RecordBatch,
    name: &str,
    what: &str,
) -> Result<&'a T> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| EngineError::corrupt(format!("{what}: column '{name}' missing or mistyped")))
}

/// A column that tables written before it was added do not have: None there, else as
/// [`column`].
pub(super) fn optional_column<'a, T: 'static>(
    batch: &'a RecordBatch,
    name: &str,
    what: &str,
) -> Result<Option<&'a T>> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(_) => column::<T>(batch, name, what).map(Some),
    }
}

/// Each distinct text of the catalog files once: loading a catalog shares repeated texts
/// (a dozen operators across 100 000 stations, a station's id across its parameters) instead
/// of allocating a copy per row.
#[derive(Default)]
pub(crate) struct Interner(HashSet<Text>);

impl Interner {
    pub(crate) fn text(&mut self, s: &str) -> Text {
        if let Some(t) = self.0.get(s) {
            return Arc::clone(t);
        }
        let t: Text = Arc::from(s);
        self.0.insert(Arc::clone(&t));
        t
    }

    fn opt_text(&mut self, a: &StringArray, i: usize) -> Option<Text> {
        a.is_valid(i).then(|| self.text(a.value(i)))
    }

    /// An id, sharing the text of an equal id read before.
    pub(crate) fn id<T>(&mut self, s: &str, what: &str) -> Result<T>
    where
        T: SharedId,
    {
        T::parse_shared(self.text(s)).map_err(|e| EngineError::corrupt(format!("{what}: {e}")))
    }
}

fn opt_f64(a: &Float64Array, i: usize) -> Option<f64> {
    a.is_valid(i).then(|| a.value(i))
}

fn parse_id<T: FromStr>(s: &str, what: &str) -> Result<T>
where
    T::Err: std::fmt::Display,
{
    s.parse()
        .map_err(|e: T::Err| EngineError::corrupt(format!("{what}: {e}")))
}

pub(crate) fn encode_stations(stations: &[Station]) -> Result<Bytes> {
    let s = stations;
    let batch = RecordBatch::try_from_iter(vec![
        ("id", strings(s.iter().map(|x| x.id.as_str()))),
        ("name", strings(s.iter().map(|x| &*x.name))),
        ("type", strings(s.iter().map(|x| x.kind.as_str()))),
        ("state", strings(s.iter().map(|x| &*x.state))),
        ("operator", strings(s.iter().map(|x| &*x.operator))),
        (
            "water_body_id",
            strings(s.iter().map(|x| &*x.water_body_id)),
        ),
        (
            "water_body_name",
            strings(s.iter().map(|x| &*x.water_body_name)),
        ),
        ("lat", floats(s.iter().map(|x| Some(x.coordinates.lat)))),
        ("lon", floats(s.iter().map(|x| Some(x.coordinates.lon)))),
        ("river_km", floats(s.iter().map(|x| x.river_km))),
        (
            "gauge_zero_value",
            floats(s.iter().map(|x| x.gauge_zero.as_ref().map(|g| g.value))),
        ),
        (
            "gauge_zero_unit",
            opt_strings(s.iter().map(|x| x.gauge_zero.as_ref().map(|g| &*g.unit))),
        ),
        (
            "gauge_zero_datum",
            opt_strings(s.iter().map(|x| x.gauge_zero.as_ref().map(|g| &*g.datum))),
        ),
        ("ground_level", floats(s.iter().map(|x| x.ground_level))),
        ("elevation", floats(s.iter().map(|x| x.elevation))),
    ])?;
    to_parquet(batch)
}

pub(crate) fn decode_stations(bytes: Bytes, texts: &mut Interner) -> Result<Vec<Station>> {
    const W: &str = "stations";
    let (rows, batches) = from_parquet(bytes, W)?;
    let mut out = room_for(rows, W)?;
    for b in batches {
        let b = b?;
        let id = column::<StringArray>(&b, "id", W)?;
        let name = column::<StringArray>(&b, "name", W)?;
        let kind = column::<StringArray>(&b, "type", W)?;
        let state = column::<StringArray>(&b, "state", W)?;
        let operator = column::<StringArray>(&b, "operator", W)?;
        let wb_id = column::<StringArray>(&b, "water_body_id", W)?;
        let wb_name = column::<StringArray>(&b, "water_body_name", W)?;
        let lat = column::<Float64Array>(&b, "lat", W)?;
        let lon = column::<Float64Array>(&b, "lon", W)?;
        let river_km = column::<Float64Array>(&b, "river_km", W)?;
        let gz_value = column::<Float64Array>(&b, "gauge_zero_value", W)?;
        let gz_unit = column::<StringArray>(&b, "gauge_zero_unit", W)?;
        let gz_datum = column::<StringArray>(&b, "gauge_zero_datum", W)?;
        let ground = column::<Float64Array>(&b, "ground_level", W)?;
        let elevation = column::<Float64Array>(&b, "elevation", W)?;
        for i in 0..b.num_rows() {
            out.push(Station {
                id: texts.id(id.value(i), W)?,
                name: name.value(i).to_owned(),
                kind: parse_id(kind.value(i), W)?,
                state: texts.text(state.value(i)),
                operator: texts.text(operator.value(i)),
                water_body_id: texts.text(wb_id.value(i)),
                water_body_name: texts.text(wb_name.value(i)),
                coordinates: Coordinates {
                    lat: lat.value(i),
                    lon: lon.value(i),
                },
                river_km: opt_f64(river_km, i),
                gauge_zero: opt_f64(gz_value, i).map(|value| GaugeZero {
                    value,
                    unit: texts.opt_text(gz_unit, i).unwrap_or_default(),
                    datum: texts.opt_text(gz_datum, i).unwrap_or_default(),
                }),
                ground_level: opt_f64(ground, i),
                elevation: opt_f64(elevation, i),
            });
        }
    }
    Ok(out)
}

pub(crate) fn encode_parameters(parameters: &[Parameter]) -> Result<Bytes> {
    let p = parameters;
    let mut availability = ListBuilder::new(StructBuilder::from_fields(period_fields(), 0));
    for x in p {
        let periods = availability.values();
        for period in &x.availability {
            periods
                .field_builder::<TimestampMicrosecondBuilder>(0)
                .ok_or_else(|| EngineError::Internal("availability builder".into()))?
                .append_value(period.start);
            periods
                .field_builder::<TimestampMicrosecondBuilder>(1)
                .ok_or_else(|| EngineError::Internal("availability builder".into()))?
                .append_value(period.end);
            periods.append(true);
        }
        availability.append(true);
    }
    let availability: ListArray = availability.finish();
    let availability = fix_list_timezones(availability)?;
    let batch = RecordBatch::try_from_iter(vec![
        ("station_id", strings(p.iter().map(|x| x.station.as_str()))),
        ("id", strings(p.iter().map(|x| x.id.as_str()))),
        ("name", strings(p.iter().map(|x| &*x.name))),
        (
            "observed_property",
            strings(p.iter().map(|x| &*x.observed_property)),
        ),
        ("unit", strings(p.iter().map(|x| &*x.unit))),
        ("interval", strings(p.iter().map(|x| &*x.interval))),
        ("availability", availability),
        (
            "latest_timestamp",
            micros(p.iter().map(|x| x.latest.as_ref().map(|l| l.timestamp))),
        ),
        (
            "latest_value",
            floats(p.iter().map(|x| x.latest.as_ref().map(|l| l.value))),
        ),
        (
            "latest_quality",
            opt_strings(p.iter().map(|x| x.latest.as_ref().map(|l| &*l.quality))),
        ),
    ])?;
    to_parquet(batch)
}

/// The struct builder makes zone-less timestamps; give the list's fields the UTC zone.
fn fix_list_timezones(list: ListArray) -> Result<ArrayRef> {
    let target = DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(period_fields()),
        true,
    )));
    Ok(datafusion::arrow::compute::cast(&list, &target)?)
}

pub(crate) fn decode_parameters(bytes: Bytes, texts: &mut Interner) -> Result<Vec<Parameter>> {
    const W: &str = "parameters";
    let (rows, batches) = from_parquet(bytes, W)?;
    let mut out = room_for(rows, W)?;
    for b in batches {
        let b = b?;
        let station = column::<StringArray>(&b, "station_id", W)?;
        let id = column::<StringArray>(&b, "id", W)?;
        let name = column::<StringArray>(&b, "name", W)?;
        let observed = column::<StringArray>(&b, "observed_property", W)?;
        let unit = column::<StringArray>(&b, "unit", W)?;
        let interval = column::<StringArray>(&b, "interval", W)?;
        let availability = column::<ListArray>(&b, "availability", W)?;
        let latest = LatestColumns::of(&b)?;
        for i in 0..b.num_rows() {
            let periods = availability.value(i);
            let periods = periods.as_struct();
            let starts = periods.column(0).as_primitive::<TimestampMicrosecondType>();
            let ends = periods.column(1).as_primitive::<TimestampMicrosecondType>();
            out.push(Parameter {
                station: texts.id(station.value(i), W)?,
                id: texts.id(id.value(i), W)?,
                name: texts.text(name.value(i)),
                observed_property: texts.text(observed.value(i)),
                unit: texts.text(unit.value(i)),
                interval: texts.text(interval.value(i)),
                availability: (0..periods.len())
                    .map(|j| Period {
                        start: starts.value(j),
                        end: ends.value(j),
                    })
                    .collect(),
                latest: latest.as_ref().and_then(|l| l.row(i, texts)),
            });
        }
    }
    Ok(out)
}

/// The parameters table's newest value of each series (tables written before it have none).
struct LatestColumns<'a> {
    timestamp: &'a TimestampMicrosecondArray,
    value: &'a Float64Array,
    quality: &'a StringArray,
}

impl<'a> LatestColumns<'a> {
    fn of(b: &'a RecordBatch) -> Result<Option<Self>> {
        const W: &str = "parameters";
        if b.schema().column_with_name("latest_timestamp").is_none() {
            return Ok(None);
        }
        Ok(Some(Self {
            timestamp: column(b, "latest_timestamp", W)?,
            value: column(b, "latest_value", W)?,
            quality: column(b, "latest_quality", W)?,
        }))
    }

    /// Row `i`'s, where all three are given.
    fn row(&self, i: usize, texts: &mut Interner) -> Option<Latest> {
        let given =
            self.timestamp.is_valid(i) && self.value.is_valid(i) && self.quality.is_valid(i);
        given.then(|| Latest {
            timestamp: self.timestamp.value(i),
            value: self.value.value(i),
            quality: texts.text(self.quality.value(i)),
        })
    }
}

pub(crate) fn encode_characteristics(items: &[Characteristic]) -> Result<Bytes> {
    let c = items;
    let batch = RecordBatch::try_from_iter(vec![
        ("station_id", strings(c.iter().map(|x| x.station.as_str()))),
        ("id", strings(c.iter().map(|x| x.id.as_str()))),
        ("name", strings(c.iter().map(|x| &*x.name))),
        ("type", strings(c.iter().map(|x| x.kind.as_str()))),
        (
            "parameter_id",
            strings(c.iter().map(|x| x.parameter.as_str())),
        ),
        ("value", floats(c.iter().map(|x| Some(x.value)))),
        ("unit", strings(c.iter().map(|x| &*x.unit))),
        (
            "period_start",
            micros(c.iter().map(|x| x.period.map(|p| p.start))),
        ),
        (
            "period_end",
            micros(c.iter().map(|x| x.period.map(|p| p.end))),
        ),
        (
            "description",
            opt_strings(c.iter().map(|x| x.description.as_deref())),
        ),
    ])?;
    to_parquet(batch)
}

pub(crate) fn decode_characteristics(
    bytes: Bytes,
    texts: &mut Interner,
) -> Result<Vec<Characteristic>> {
    const W: &str = "characteristics";
    let (rows, batches) = from_parquet(bytes, W)?;
    let mut out = room_for(rows, W)?;
    for b in batches {
        let b = b?;
        let station = column::<StringArray>(&b, "station_id", W)?;
        let id = column::<StringArray>(&b, "id", W)?;
        let name = column::<StringArray>(&b, "name", W)?;
        let kind = column::<StringArray>(&b, "type", W)?;
        let parameter = column::<StringArray>(&b, "parameter_id", W)?;
        let value = column::<Float64Array>(&b, "value", W)?;
        let unit = column::<StringArray>(&b, "unit", W)?;
        let start = column::<TimestampMicrosecondArray>(&b, "period_start", W)?;
        let end = column::<TimestampMicrosecondArray>(&b, "period_end", W)?;
        let description = column::<StringArray>(&b, "description", W)?;
        for i in 0..b.num_rows() {
            out.push(Characteristic {
                station: texts.id::<StationId>(station.value(i), W)?,
                id: texts.id::<CharacteristicId>(id.value(i), W)?,
                name: texts.text(name.value(i)),
                kind: parse_id(kind.value(i), W)?,
                parameter: texts.id::<ParameterId>(parameter.value(i), W)?,
                value: value.value(i),
                unit: texts.text(unit.value(i)),
                period: (start.is_valid(i) && end.is_valid(i)).then(|| Period {
                    start: start.value(i),
                    end: end.value(i),
                }),
                description: texts.opt_text(description, i),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StationType;

    fn station(id: &str, operator: &str) -> Station {
        Station {
            id: id.parse().unwrap(),
            name: format!("Station {id}"),
            kind: StationType::SurfaceWater,
            state: "DE-NW".into(),
            operator: operator.into(),
            water_body_id: "rhine".into(),
            water_body_name: "Rhein".into(),
            coordinates: Coordinates {
                lat: 50.7,
                lon: 7.1,
            },
            river_km: Some(654.8),
            gauge_zero: Some(GaugeZero {
                value: 42.1,
                unit: "m".into(),
                datum: "DHHN2016".into(),
            }),
            ground_level: None,
            elevation: None,
        }
    }

    /// Stations and parameters read back as written (a newest value given or not), and equal
    /// texts read back as one: the operators two stations share, and a station's id in its
    /// parameters.
    #[test]
    fn catalog_files_read_back_with_shared_texts() {
        let stations = vec![
            station("a", "WSV"),
            station("b", "WSV"),
            station("c", "LANUV"),
        ];
        let level = Parameter {
            station: "b".parse().unwrap(),
            id: "water-level-15min".parse().unwrap(),
            name: "Wasserstand".into(),
            observed_property: "waterLevel".into(),
            unit: "cm".into(),
            interval: "PT15M".into(),
            availability: vec![Period {
                start: 0,
                end: 900_000_000,
            }],
            latest: Some(Latest {
                timestamp: 900_000_000,
                value: 123.4,
                quality: "raw".into(),
            }),
        };
        let flow = Parameter {
            id: "discharge-15min".parse().unwrap(),
            latest: None,
            ..level.clone()
        };
        let parameters = vec![level, flow];
        let mut texts = Interner::default();
        let read = decode_stations(encode_stations(&stations).unwrap(), &mut texts).unwrap();
        let params =
            decode_parameters(encode_parameters(&parameters).unwrap(), &mut texts).unwrap();
        assert_eq!(read, stations);
        assert_eq!(params, parameters);
        assert!(Arc::ptr_eq(&read[0].operator, &read[1].operator));
        assert!(!Arc::ptr_eq(&read[1].operator, &read[2].operator));
        assert!(std::ptr::eq(
            read[1].id.as_str(),
            params[0].station.as_str()
        ));
    }
}
