//! `hydro generate`: a synthetic archive that looks like the real thing. The first stations are
//! real German gauges (see [`crate::write::gauges`]); the series are synthetic but plausible: seasonal
//! and daily cycles, autocorrelated noise, flood waves, gaps, quality flags. Characteristic
//! values are computed from the generated series, so they agree with the data.
//!
//! Deterministic by seed: each station draws from its own generator seeded by (seed, index),
//! so stations can be generated in parallel and the result does not depend on scheduling.
//! Memory is bounded: stations are produced a few at a time, month by month.

use crate::dataset::manifest::{Manifest, PublishKind};
use crate::error::{EngineError, Result};
use crate::model::ids::{CharacteristicId, ParameterId, StationId};
use crate::model::month::Month;
use crate::model::{
    Characteristic, CharacteristicType, Coordinates, GaugeZero, Micros, Parameter, Period, Station,
    StationType, Text,
};
use crate::write::derived::DerivedChange;
use crate::write::gauges::{GAUGES, Means, NAME_PARTS, STATES, gauge_position, means_along_river};
use crate::write::writer::{DatasetWriter, EncodedMonth, SeriesChunk, encode_month};
use chrono::{Datelike, Months, NaiveDate, TimeZone, Timelike, Utc};
use datafusion::object_store::ObjectStore;
use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::f64::consts::TAU;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone)]
pub struct GenerateOptions {
    pub stations: usize,
    /// Years of values; 0 writes a catalog without values.
    pub years: u32,
    /// Measurement interval in minutes.
    pub interval_minutes: u32,
    pub seed: u64,
    pub start: NaiveDate,
    /// The dataset's derived-value settings (none: the defaults).
    pub derived: DerivedChange,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            // The 46 real gauges, then 14 made-up stations of every type.
            stations: 60,
            years: 3,
            interval_minutes: 15,
            seed: 42,
            start: NaiveDate::from_ymd_opt(2022, 1, 1).unwrap_or_default(),
            derived: DerivedChange::default(),
        }
    }
}

/// The slug suffix of an interval: 15 → `15min`, 60 → `1h`, 1440 → `1d`.
fn interval_slug(minutes: u32) -> String {
    match minutes {
        m if m % 1440 == 0 => format!("{}d", m / 1440),
        m if m % 60 == 0 => format!("{}h", m / 60),
        m => format!("{m}min"),
    }
}

fn interval_iso(minutes: u32) -> String {
    match minutes {
        m if m % 1440 == 0 => format!("P{}D", m / 1440),
        m if m % 60 == 0 => format!("PT{}H", m / 60),
        m => format!("PT{m}M"),
    }
}

/// What a parameter measures and how to synthesise it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Quantity {
    WaterLevel,
    Discharge,
    GroundwaterLevel,
    AirTemperature,
    Precipitation,
}

impl Quantity {
    fn describe(self) -> (&'static str, &'static str, &'static str, &'static str) {
        // (slug, name, observedProperty, unit)
        match self {
            Self::WaterLevel => ("water-level", "Water level", "waterLevel", "cm"),
            Self::Discharge => ("discharge", "Discharge", "discharge", "m³/s"),
            Self::GroundwaterLevel => (
                "groundwater-level",
                "Groundwater level",
                "groundwaterLevel",
                "m a.s.l.",
            ),
            Self::AirTemperature => ("air-temperature", "Air temperature", "airTemperature", "°C"),
            Self::Precipitation => ("precipitation", "Precipitation", "precipitation", "mm"),
        }
    }

    fn for_type(t: StationType) -> &'static [Quantity] {
        match t {
            StationType::SurfaceWater => &[Self::WaterLevel, Self::Discharge],
            StationType::Groundwater => &[Self::GroundwaterLevel],
            StationType::Weather => &[Self::AirTemperature, Self::Precipitation],
        }
    }
}

fn station_rng(seed: u64, index: usize) -> StdRng {
    StdRng::seed_from_u64(
        seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (index as u64)
                .wrapping_add(1)
                .wrapping_mul(0xD1B5_4A32_D192_ED03),
    )
}

fn uuid(rng: &mut StdRng) -> String {
    let v: u128 = rng.random();
    let v = (v & !(0xF << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn make_station(index: usize, seed: u64) -> Result<Station> {
    let mut rng = station_rng(seed, index);
    let id: StationId = uuid(&mut rng)
        .parse()
        .map_err(|e| EngineError::Internal(format!("generated id: {e}")))?;
    if let Some(&(name, water, water_id, state, lat, lon, operator)) = GAUGES.get(index) {
        let (river_km, gauge_zero) = gauge_position(name).unwrap_or_else(|| {
            (
                (rng.random_range(5.0..900.0_f64) * 10.0).round() / 10.0,
                (rng.random_range(1.0..350.0_f64) * 100.0).round() / 100.0,
            )
        });
        return Ok(Station {
            id,
            name: name.to_owned(),
            kind: StationType::SurfaceWater,
            state: format!("DE-{state}").into(),
            operator: operator.into(),
            water_body_id: water_id.into(),
            water_body_name: water.into(),
            coordinates: Coordinates { lat, lon },
            river_km: Some(river_km),
            gauge_zero: Some(GaugeZero {
                value: gauge_zero,
                unit: "m".into(),
                datum: "DHHN2016".into(),
            }),
            ground_level: None,
            elevation: None,
        });
    }
    // Beyond the real gauges, two in five stations are wells and weather stations.
    let kind = match index % 5 {
        3 => StationType::Groundwater,
        4 => StationType::Weather,
        _ => StationType::SurfaceWater,
    };
    let (prefixes, suffixes) = NAME_PARTS;
    let place = format!(
        "{}{}",
        prefixes[rng.random_range(0..prefixes.len())],
        suffixes[rng.random_range(0..suffixes.len())]
    );
    let name = match kind {
        StationType::Groundwater => format!("{place} GWM {}", index % 97 + 1),
        StationType::Weather => format!("{place} (Wetter)"),
        StationType::SurfaceWater => {
            return Ok(between_gauges(id, format!("{place} {index}"), &mut rng));
        }
    };
    Ok(near_a_gauge(id, name, kind, &mut rng))
}

/// A made-up well or weather station in the valley of a real gauge: up to ~15 km from it, in
/// its state (operated by the state's agency, or the weather service), its ground 2 to 60 m
/// above the gauge's zero. Not anywhere in a box around Germany, which put stations in the
/// North Sea and in Poland.
fn near_a_gauge(id: StationId, name: String, kind: StationType, rng: &mut StdRng) -> Station {
    let (gauge, _, _, state, lat, lon, gauge_operator) = GAUGES[rng.random_range(0..GAUGES.len())];
    let operator = match kind {
        StationType::Weather => "DWD",
        _ => STATES
            .iter()
            .find(|(code, _)| *code == state)
            .map_or(gauge_operator, |(_, agency)| *agency),
    };
    let zero = gauge_position(gauge).map_or(100.0, |(_, zero)| zero);
    let ground = ((zero + rng.random_range(2.0..60.0_f64)) * 100.0).round() / 100.0;
    Station {
        id,
        name,
        kind,
        state: format!("DE-{state}").into(),
        operator: operator.into(),
        water_body_id: Text::default(),
        water_body_name: Text::default(),
        coordinates: Coordinates {
            lat: ((lat + rng.random_range(-0.12..0.12_f64)) * 1e5).round() / 1e5,
            lon: ((lon + rng.random_range(-0.18..0.18_f64)) * 1e5).round() / 1e5,
        },
        river_km: None,
        gauge_zero: None,
        ground_level: (kind == StationType::Groundwater).then_some(ground),
        elevation: (kind == StationType::Weather).then_some(ground),
    }
}

/// A made-up gauge on a river between two neighbouring real ones: its river km, gauge zero
/// and position a share of the way from one to the other, so that along each river they
/// agree with the real gauges (a hydrologist reading the demo sees no gauge upstream of its
/// own source); state and operator those of the nearer real gauge.
fn between_gauges(id: StationId, name: String, rng: &mut StdRng) -> Station {
    // Neighbouring real gauges with known positions, river by river, in river-km order.
    let mut placed: Vec<(&str, f64, f64, usize)> = GAUGES
        .iter()
        .enumerate()
        .filter_map(|(i, g)| gauge_position(g.0).map(|(km, zero)| (g.2, km, zero, i)))
        .collect();
    placed.sort_by(|a, b| a.0.cmp(b.0).then(a.1.total_cmp(&b.1)));
    let pairs: Vec<_> = placed
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| (w[0], w[1]))
        .collect();
    let (a, b) = pairs[rng.random_range(0..pairs.len())];
    let share = rng.random_range(0.2..0.8_f64);
    let lerp = |x: f64, y: f64| x + share * (y - x);
    let (ga, gb) = (GAUGES[a.3], GAUGES[b.3]);
    let near = if share < 0.5 { ga } else { gb };
    Station {
        id,
        name,
        kind: StationType::SurfaceWater,
        state: format!("DE-{}", near.3).into(),
        operator: near.6.into(),
        water_body_id: ga.2.into(),
        water_body_name: ga.1.into(),
        coordinates: Coordinates {
            lat: (lerp(ga.4, gb.4) * 1e5).round() / 1e5,
            lon: (lerp(ga.5, gb.5) * 1e5).round() / 1e5,
        },
        river_km: Some((lerp(a.1, b.1) * 10.0).round() / 10.0),
        gauge_zero: Some(GaugeZero {
            value: (lerp(a.2, b.2) * 100.0).round() / 100.0,
            unit: "m".into(),
            datum: "DHHN2016".into(),
        }),
        ground_level: None,
        elevation: None,
    }
}

fn parameters_of(station: &Station, interval_minutes: u32) -> Result<Vec<(Quantity, Parameter)>> {
    Quantity::for_type(station.kind)
        .iter()
        .map(|&q| {
            let (slug, name, observed, unit) = q.describe();
            let id: ParameterId = format!("{slug}-{}", interval_slug(interval_minutes))
                .parse()
                .map_err(|e| EngineError::Internal(format!("generated id: {e}")))?;
            Ok((
                q,
                Parameter {
                    station: station.id.clone(),
                    id,
                    name: name.into(),
                    observed_property: observed.into(),
                    unit: unit.into(),
                    interval: interval_iso(interval_minutes).into(),
                    availability: Vec::new(),
                    latest: None,
                },
            ))
        })
        .collect()
}

/// A flood wave: rise to `peak` over `rise` hours from `start`, then exponential decay.
struct Flood {
    start: f64,
    rise: f64,
    decay: f64,
    peak: f64,
}

/// How much floods lift a series' mean water level above its base level (measured over the
/// demo's gauges: their MW characteristic against the base level).
const FLOOD_LIFT: f64 = 1.03;

/// How much a series' mean discharge exceeds the rating curve at its base level: the curve is
/// convex, and seasons and floods swing the level around the base (measured like
/// `FLOOD_LIFT`).
const RATING_LIFT: f64 = 1.15;

/// Per-station synthesis state (all times in hours since the series start).
struct Synth {
    rng: StdRng,
    mean: f64,
    seasonal: f64,
    noise: f64,
    floods: Vec<Flood>,
    gaps: Vec<(f64, f64)>,
    rating: (f64, f64),
    raining: bool,
}

impl Synth {
    /// A station's synthesis; with `means` (a gauge's published MW and MQ) its water level
    /// wanders around MW and its rating curve passes MQ, else both are drawn.
    fn new(mut rng: StdRng, hours: f64, means: Option<Means>) -> Self {
        let drawn = rng.random_range(120.0..450.0);
        // Floods lift the mean level above the base level by about `FLOOD_LIFT`.
        let mean = means.map_or(drawn, |m| m.water_level_cm / FLOOD_LIFT);
        let mut floods = Vec::new();
        let mut gaps = Vec::new();
        let years = (hours / 8766.0).ceil() as usize;
        for y in 0..years {
            for _ in 0..rng.random_range(1..5) {
                floods.push(Flood {
                    start: (y as f64 + rng.random_range(0.0..1.0)) * 8766.0,
                    rise: rng.random_range(12.0..60.0),
                    decay: rng.random_range(30.0..140.0),
                    peak: mean * rng.random_range(0.4..1.6),
                });
            }
            for _ in 0..rng.random_range(0..3) {
                let s = (y as f64 + rng.random_range(0.0..1.0)) * 8766.0;
                gaps.push((s, s + rng.random_range(2.0..72.0)));
            }
        }
        let (drawn, w0) = (rng.random_range(0.5..6.0), mean * 0.15);
        // Q = c·((W − W0)/10)^1.6 at the base level, times what floods and seasons add to
        // the mean of a convex curve (`RATING_LIFT`), is MQ.
        let c = means.map_or(drawn, |m| {
            m.discharge / (((mean - w0) / 10.0).powf(1.6) * RATING_LIFT)
        });
        let rating = (c, w0);
        Self {
            rng,
            mean,
            seasonal: mean * 0.25,
            noise: 0.0,
            floods,
            gaps,
            rating,
            raining: false,
        }
    }

    fn in_gap(&self, h: f64) -> bool {
        self.gaps.iter().any(|&(s, e)| h >= s && h < e)
    }

    fn after_gap(&self, h: f64) -> bool {
        self.gaps.iter().any(|&(_, e)| h >= e && h < e + 24.0)
    }

    fn flood(&self, h: f64) -> f64 {
        self.floods
            .iter()
            .map(|f| {
                let t = h - f.start;
                if t < 0.0 || t > f.rise + 12.0 * f.decay {
                    0.0
                } else if t < f.rise {
                    f.peak * (0.5 - 0.5 * (std::f64::consts::PI * t / f.rise).cos())
                } else {
                    f.peak * (-(t - f.rise) / f.decay).exp()
                }
            })
            .sum()
    }

    /// Values of all quantities at time `h` (hours), day of year `doy`, hour of day `hod`.
    fn sample(&mut self, quantities: &[Quantity], h: f64, doy: f64, hod: f64, out: &mut Vec<f64>) {
        out.clear();
        self.noise = 0.995 * self.noise + self.rng.random_range(-1.0..1.0) * 0.6;
        let season = (TAU * (doy - 60.0) / 365.25).cos();
        let day = (TAU * (hod - 15.0) / 24.0).cos();
        let level =
            (self.mean + self.seasonal * season + 2.0 * day + self.noise + self.flood(h)).max(5.0);
        for q in quantities {
            let v = match q {
                Quantity::WaterLevel => (level * 10.0).round() / 10.0,
                Quantity::Discharge => {
                    let (c, w0) = self.rating;
                    let x = ((level - w0).max(1.0)) / 10.0;
                    (c * x.powf(1.6) * 100.0).round() / 100.0
                }
                Quantity::GroundwaterLevel => {
                    let depth = 4.0 + 0.6 * season + self.noise * 0.01;
                    ((self.mean - depth) * 100.0).round() / 100.0
                }
                Quantity::AirTemperature => {
                    let t = 9.0 - 9.0 * (TAU * (doy - 15.0) / 365.25).cos()
                        + 4.0 * day
                        + self.noise * 0.3;
                    (t * 10.0).round() / 10.0
                }
                Quantity::Precipitation => {
                    if self.rng.random_range(0.0..1.0) < if self.raining { 0.03 } else { 0.004 } {
                        self.raining = !self.raining;
                    }
                    if self.raining {
                        (self.rng.random_range(0.0..1.5_f64) * 10.0).round() / 10.0
                    } else {
                        0.0
                    }
                }
            };
            out.push(v);
        }
    }
}

/// Running per-year statistics of one series, for characteristic values.
#[derive(Default, Clone)]
struct YearStats {
    min: f64,
    max: f64,
    max_at: Micros,
    min_at: Micros,
    sum: f64,
    count: u64,
}

struct StationOutput {
    months: Vec<(Month, EncodedMonth)>,
    characteristics: Vec<Characteristic>,
}

fn generate_station(
    station: &Station,
    params: &[(Quantity, Parameter)],
    opts: &GenerateOptions,
    index: usize,
) -> Result<StationOutput> {
    let start = Utc.from_utc_datetime(&opts.start.and_hms_opt(0, 0, 0).unwrap_or_default());
    let end = start
        .checked_add_months(Months::new(12 * opts.years))
        .ok_or_else(|| EngineError::InvalidQuery("period too long".into()))?;
    let step = i64::from(opts.interval_minutes) * 60_000_000;
    let (t0, t_end) = (start.timestamp_micros(), end.timestamp_micros());
    let hours_total = (t_end - t0) as f64 / 3.6e9;
    let unchecked_from = t_end - 45 * 86_400_000_000;
    let means = station
        .river_km
        .and_then(|km| means_along_river(&station.name, &station.water_body_id, km));
    let mut synth = Synth::new(station_rng(opts.seed ^ 0x5EED, index), hours_total, means);
    let quantities: Vec<Quantity> = params.iter().map(|p| p.0).collect();
    let mut years: Vec<BTreeMap<i32, YearStats>> = vec![BTreeMap::new(); params.len()];
    let mut months = Vec::new();
    let mut sample = Vec::new();
    let mut month_start = start;
    while month_start < end {
        let month_end = month_start
            .checked_add_months(Months::new(1))
            .unwrap_or(end)
            .min(end);
        let mut chunks: Vec<SeriesChunk> = params
            .iter()
            .map(|(_, p)| SeriesChunk {
                parameter: p.id.clone(),
                timestamps: Vec::new(),
                values: Vec::new(),
                quality: Vec::new(),
            })
            .collect();
        // First step on or after the month start, aligned to the series start.
        let mut ts = t0 + ((month_start.timestamp_micros() - t0 + step - 1) / step) * step;
        while ts < month_end.timestamp_micros() {
            let h = (ts - t0) as f64 / 3.6e9;
            if !synth.in_gap(h) {
                let dt = chrono::DateTime::<Utc>::from_timestamp_micros(ts).unwrap_or(start);
                let hod = f64::from(dt.hour()) + f64::from(dt.minute()) / 60.0;
                synth.sample(&quantities, h, f64::from(dt.ordinal()), hod, &mut sample);
                let quality = if ts >= unchecked_from {
                    "unchecked"
                } else if synth.after_gap(h) {
                    "estimated"
                } else if synth.rng.random_range(0..4000) == 0 {
                    "suspect"
                } else {
                    "good"
                };
                for (k, chunk) in chunks.iter_mut().enumerate() {
                    let v = sample[k];
                    chunk.timestamps.push(ts);
                    chunk.values.push(v);
                    chunk.quality.push(quality);
                    let y = years[k].entry(dt.year()).or_insert(YearStats {
                        min: f64::INFINITY,
                        max: f64::NEG_INFINITY,
                        ..Default::default()
                    });
                    if v < y.min {
                        y.min = v;
                        y.min_at = ts;
                    }
                    if v > y.max {
                        y.max = v;
                        y.max_at = ts;
                    }
                    y.sum += v;
                    y.count += 1;
                }
            }
            ts += step;
        }
        let month = Month::of(month_start.timestamp_micros());
        if chunks.iter().any(|c| !c.timestamps.is_empty()) {
            months.push((month, encode_month(&mut chunks)?));
        }
        month_start = month_end;
    }
    let characteristics = characteristics_of(station, params, &years, (t0, t_end - step))?;
    Ok(StationOutput {
        months,
        characteristics,
    })
}

/// Main values (MW, MNW, MHW, MQ, ...), extremes (HHW, NNW) and marks from the yearly stats.
fn characteristics_of(
    station: &Station,
    params: &[(Quantity, Parameter)],
    years: &[BTreeMap<i32, YearStats>],
    period: (Micros, Micros),
) -> Result<Vec<Characteristic>> {
    let mut out = Vec::new();
    let period = Some(Period {
        start: period.0,
        end: period.1,
    });
    let round = |v: f64| (v * 100.0).round() / 100.0;
    let mut push = |id: &str,
                    name: &str,
                    kind,
                    p: &Parameter,
                    value: f64,
                    per: Option<Period>,
                    desc: &str|
     -> Result<()> {
        let id: CharacteristicId = id
            .parse()
            .map_err(|e| EngineError::Internal(format!("generated id: {e}")))?;
        out.push(Characteristic {
            station: station.id.clone(),
            id,
            name: name.into(),
            kind,
            parameter: p.id.clone(),
            value: round(value),
            unit: p.unit.clone(),
            period: per,
            description: Some(desc.into()),
        });
        Ok(())
    };
    for ((q, p), ys) in params.iter().zip(years) {
        let ys: Vec<&YearStats> = ys.values().filter(|y| y.count > 0).collect();
        if ys.is_empty() {
            continue;
        }
        let n = ys.len() as f64;
        let mean =
            ys.iter().map(|y| y.sum).sum::<f64>() / ys.iter().map(|y| y.count).sum::<u64>() as f64;
        let mean_min = ys.iter().map(|y| y.min).sum::<f64>() / n;
        let mean_max = ys.iter().map(|y| y.max).sum::<f64>() / n;
        let hi = ys
            .iter()
            .max_by(|a, b| a.max.total_cmp(&b.max))
            .copied()
            .cloned()
            .unwrap_or_default();
        let lo = ys
            .iter()
            .min_by(|a, b| a.min.total_cmp(&b.min))
            .copied()
            .cloned()
            .unwrap_or_default();
        let at = |t: Micros| Some(Period { start: t, end: t });
        match q {
            Quantity::WaterLevel => {
                push(
                    "mw",
                    "MW",
                    CharacteristicType::MainValue,
                    p,
                    mean,
                    period,
                    "mean water level",
                )?;
                push(
                    "mnw",
                    "MNW",
                    CharacteristicType::MainValue,
                    p,
                    mean_min,
                    period,
                    "mean of the yearly lowest water levels",
                )?;
                push(
                    "mhw",
                    "MHW",
                    CharacteristicType::MainValue,
                    p,
                    mean_max,
                    period,
                    "mean of the yearly highest water levels",
                )?;
                push(
                    "hhw",
                    "HHW",
                    CharacteristicType::Statistic,
                    p,
                    hi.max,
                    at(hi.max_at),
                    "highest water level observed",
                )?;
                push(
                    "nnw",
                    "NNW",
                    CharacteristicType::Statistic,
                    p,
                    lo.min,
                    at(lo.min_at),
                    "lowest water level observed",
                )?;
                push(
                    "hsw",
                    "HSW",
                    CharacteristicType::Derived,
                    p,
                    mean + 0.8 * (mean_max - mean),
                    period,
                    "highest navigable water level",
                )?;
                for (k, f) in [(1, 0.55), (2, 0.8), (3, 1.05)] {
                    push(
                        &format!("mark-{k}"),
                        &format!("Flood warning level {k}"),
                        CharacteristicType::Mark,
                        p,
                        mean + f * (mean_max - mean),
                        None,
                        "water-level mark of the flood warning service",
                    )?;
                }
            }
            Quantity::Discharge => {
                push(
                    "mq",
                    "MQ",
                    CharacteristicType::MainValue,
                    p,
                    mean,
                    period,
                    "mean discharge",
                )?;
                push(
                    "mnq",
                    "MNQ",
                    CharacteristicType::MainValue,
                    p,
                    mean_min,
                    period,
                    "mean of the yearly lowest discharges",
                )?;
                push(
                    "mhq",
                    "MHQ",
                    CharacteristicType::MainValue,
                    p,
                    mean_max,
                    period,
                    "mean of the yearly highest discharges",
                )?;
                push(
                    "hhq",
                    "HHQ",
                    CharacteristicType::Statistic,
                    p,
                    hi.max,
                    at(hi.max_at),
                    "highest discharge observed",
                )?;
            }
            Quantity::GroundwaterLevel => {
                push(
                    "mgw",
                    "MGW",
                    CharacteristicType::MainValue,
                    p,
                    mean,
                    period,
                    "mean groundwater level",
                )?;
                push(
                    "hgw",
                    "HGW",
                    CharacteristicType::Statistic,
                    p,
                    hi.max,
                    at(hi.max_at),
                    "highest groundwater level observed",
                )?;
                push(
                    "ngw",
                    "NGW",
                    CharacteristicType::Statistic,
                    p,
                    lo.min,
                    at(lo.min_at),
                    "lowest groundwater level observed",
                )?;
            }
            Quantity::AirTemperature => {
                push(
                    "mt",
                    "Mean air temperature",
                    CharacteristicType::Statistic,
                    p,
                    mean,
                    period,
                    "mean air temperature",
                )?;
            }
            Quantity::Precipitation => {
                let total = ys.iter().map(|y| y.sum).sum::<f64>() / n;
                push(
                    "annual-precipitation",
                    "Mean annual precipitation",
                    CharacteristicType::Derived,
                    p,
                    total,
                    period,
                    "mean yearly precipitation sum",
                )?;
            }
        }
    }
    Ok(out)
}

/// Writes a synthetic dataset and publishes it. `progress(done, total)` is called per station.
pub async fn generate(
    store: Arc<dyn ObjectStore>,
    opts: &GenerateOptions,
    progress: impl Fn(u64, u64),
) -> Result<Manifest> {
    if opts.interval_minutes == 0 {
        return Err(EngineError::InvalidQuery(
            "interval must be at least one minute".into(),
        ));
    }
    let writer = DatasetWriter::begin(store, PublishKind::Generate)
        .await?
        .deriving(opts.derived);
    let mut stations = Vec::with_capacity(opts.stations);
    let mut parameters = Vec::new();
    let mut jobs = Vec::new();
    for i in 0..opts.stations {
        let station = make_station(i, opts.seed)?;
        let params = parameters_of(&station, opts.interval_minutes)?;
        parameters.extend(params.iter().map(|(_, p)| p.clone()));
        jobs.push((i, station.clone(), params));
        stations.push(station);
    }
    let mut characteristics = Vec::new();
    let done = AtomicU64::new(0);
    let total = opts.stations as u64;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut results = futures::stream::iter(jobs)
        .map(|(i, station, params)| {
            let opts = opts.clone();
            tokio::task::spawn_blocking(move || {
                let out = if opts.years == 0 {
                    StationOutput {
                        months: Vec::new(),
                        characteristics: Vec::new(),
                    }
                } else {
                    generate_station(&station, &params, &opts, i)?
                };
                Ok::<_, EngineError>((station.id, out))
            })
        })
        .buffer_unordered(workers);
    let written = async {
        while let Some(joined) = results.next().await {
            let (station, out) = joined.map_err(|source| EngineError::Task {
                what: "generator task",
                source,
            })??;
            for (month, encoded) in out.months {
                writer.write_month(&station, month, encoded).await?;
            }
            characteristics.extend(out.characteristics);
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
        }
        Ok::<_, EngineError>(())
    }
    .await;
    if let Err(e) = written {
        writer.abandon().await;
        return Err(e);
    }
    writer
        .publish(
            &stations,
            parameters.into_iter().collect(),
            &characteristics,
        )
        .await
}
