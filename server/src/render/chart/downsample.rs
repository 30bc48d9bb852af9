//! A series reduced to what a chart of a given width can show, in memory that does not grow
//! with the series: the smallest and largest value of each slice of time (a bucket), so that
//! peaks survive however long the window ("min/max per pixel column").
//!
//! The window's extent is not known before its values are read (`recent`, `last`, an open
//! `from`), so buckets start as narrow as a microsecond from the first value and double in
//! width, neighbours merged, whenever there are more than twice as many as the chart has
//! columns. A bucket is then at most two columns wide at the end.

/// A value as the chart draws it: when (UTC microseconds) and what.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub t: i64,
    pub v: f64,
}

/// The values of one slice of time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// Its slice: `origin + index * width` onwards.
    index: i64,
    pub min: Point,
    pub max: Point,
    /// Its first and last value's time, to tell gaps between buckets.
    pub first: i64,
    pub last: i64,
    /// Whether a value in it has a quality other than `good`.
    pub flagged: bool,
    /// Whether the line breaks before it: a missing value (null) or a step longer than the
    /// gap limit came before its first value.
    pub break_before: bool,
}

impl Bucket {
    /// The one or two points that stand for it, in time order.
    pub fn points(&self) -> impl Iterator<Item = Point> {
        let (a, b) = if self.min.t <= self.max.t {
            (self.min, self.max)
        } else {
            (self.max, self.min)
        };
        std::iter::once(a).chain((b.t != a.t).then_some(b))
    }

    fn merge(&mut self, next: &Bucket) {
        if next.min.v < self.min.v {
            self.min = next.min;
        }
        if next.max.v > self.max.v {
            self.max = next.max;
        }
        self.last = next.last;
        self.flagged |= next.flagged;
    }
}

pub struct Downsampler {
    /// Most buckets kept: twice the chart's columns.
    most: usize,
    /// A step between two values longer than this breaks the line (µs).
    gap: i64,
    origin: Option<i64>,
    width: i64,
    buckets: Vec<Bucket>,
    /// The last value's time, and whether a null came after it.
    last: Option<i64>,
    broken: bool,
}

impl Downsampler {
    /// For a chart `columns` wide, breaking the line at steps longer than `gap` µs.
    pub fn new(columns: usize, gap: i64) -> Self {
        let most = columns.max(1) * 2;
        Self {
            most,
            gap: gap.max(1),
            origin: None,
            width: 1,
            buckets: Vec::with_capacity(most + 1),
            last: None,
            broken: false,
        }
    }

    /// The next value in time order (`None`: the value is missing).
    pub fn push(&mut self, t: i64, v: Option<f64>, flagged: bool) {
        let Some(v) = v.filter(|v| v.is_finite()) else {
            self.broken = true;
            return;
        };
        let origin = *self.origin.get_or_insert(t);
        let step_break = self.last.is_some_and(|l| t.saturating_sub(l) > self.gap);
        let break_before = self.broken || step_break;
        self.broken = false;
        self.last = Some(t);
        let index = t.saturating_sub(origin) / self.width;
        let point = Point { t, v };
        let one = Bucket {
            index,
            min: point,
            max: point,
            first: t,
            last: t,
            flagged,
            break_before,
        };
        match self.buckets.last_mut() {
            Some(b) if b.index == index && !break_before => b.merge(&one),
            _ => {
                self.buckets.push(one);
                if self.buckets.len() > self.most {
                    self.coarsen();
                }
            }
        }
    }

    /// Doubles the buckets' width until there are at most `most` of them. A break inside a
    /// merged bucket is narrower than the bucket and no longer shown.
    fn coarsen(&mut self) {
        while self.buckets.len() > self.most {
            self.width = self.width.saturating_mul(2);
            let mut merged: Vec<Bucket> = Vec::with_capacity(self.most + 1);
            for b in self.buckets.drain(..) {
                let index = b.index.div_euclid(2);
                match merged.last_mut() {
                    Some(m) if m.index == index => m.merge(&b),
                    _ => merged.push(Bucket { index, ..b }),
                }
            }
            self.buckets = merged;
        }
    }

    pub fn finish(self) -> Vec<Bucket> {
        self.buckets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long series is cut to at most twice the columns, each bucket its extremes: a single
    /// peak survives; a null and a long step break the line.
    #[test]
    fn peaks_survive_and_gaps_break_the_line() {
        let mut d = Downsampler::new(100, 10);
        for i in 0..100_000i64 {
            let v = if i == 54_321 { 1e6 } else { (i % 50) as f64 };
            d.push(i, Some(v), i == 777);
        }
        let b = d.finish();
        assert!(b.len() <= 200 && b.len() > 100, "{}", b.len());
        assert!(b.iter().any(|b| b.max.v == 1e6 && b.max.t == 54_321));
        assert_eq!(b.iter().filter(|b| b.flagged).count(), 1);
        assert!(b.iter().all(|b| !b.break_before));

        let mut d = Downsampler::new(1_000, 10);
        for i in 0..10i64 {
            d.push(i, Some(1.0), false);
        }
        d.push(10, None, false);
        d.push(11, Some(2.0), false);
        d.push(100, Some(3.0), false);
        let b = d.finish();
        assert_eq!(b.len(), 12);
        let breaks: Vec<i64> = b
            .iter()
            .filter(|b| b.break_before)
            .map(|b| b.first)
            .collect();
        assert_eq!(breaks, [11, 100]);
        assert_eq!(b[0].points().count(), 1);
    }
}
