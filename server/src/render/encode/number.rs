//! Numbers as text: the shortest form that reads back exactly (what ryu prints), with a fast
//! path for what measurements are, values with at most three decimals.

use super::Out;

/// A finite float in the shortest form that reads back exactly (ryu); integral values get
/// no `.0` so that JSON and CSV show `12` as users write it. Not finite: `null`.
#[inline(always)]
pub fn number(v: f64, out: &mut impl Out) {
    // The common case inlined into the row loop: called, it was 44 % of a CSV row's time.
    match thousandths(v) {
        Some(m) => write_thousandths(m, out),
        None => other_number(v, out),
    }
}

#[inline(never)]
fn other_number(v: f64, out: &mut impl Out) {
    if !v.is_finite() {
        out.put(b"null");
        return;
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let mut b = itoa::Buffer::new();
        out.put(b.format(v as i64).as_bytes());
        return;
    }
    let mut b = ryu::Buffer::new();
    out.put(b.format_finite(v).as_bytes());
}

/// `v` as a whole number of thousandths, when `m / 1000` reads back as exactly `v`.
/// Measurements are recorded to a few decimals, and this test is several times cheaper than
/// ryu's general search (which was a fifth of a CSV download's CPU time in `perf`).
///
/// Why it is exact: `m` and `1000` are exact in f64, so `m / 1000` is the correctly rounded value
/// of the decimal, which is what a reader parses it to. Why it is the shortest form (the one ryu
/// prints): below 1e12 two decimals with three places that read back as the same double differ
/// by less than one in the last place, so any shorter form that reads back is `m / 1000` without
/// its trailing zeros, which is what [`write_thousandths`] prints.
#[inline(always)]
fn thousandths(v: f64) -> Option<i64> {
    if v.abs() >= 1e12 {
        return None;
    }
    let x = v * 1000.0;
    // Round half away from zero with a plain conversion (no libm call); exactness is checked
    // next, so an off-by-one here only costs the fallback.
    let m = (x + 0.5f64.copysign(x)) as i64;
    (m as f64 / 1000.0 == v).then_some(m)
}

/// The text of an entry of the tables below: its low seven bytes (the top byte is its length).
const TEXT: u64 = (1 << 56) - 1;

/// The three kinds of group of digits the tables below hold.
#[derive(Clone, Copy)]
enum Group {
    /// `n` without leading zeros: the first group of an integer part.
    Leading,
    /// `n` in three digits: the later groups of an integer part.
    Padded,
    /// `n` thousandths as `.d`, `.dd` or `.ddd` without trailing zeros; nothing for 0.
    Fraction,
}

const fn digit(n: usize) -> u8 {
    b'0' + (n % 10) as u8
}

/// The text of `n` (below 1 000) as a group of the kind, and its length.
const fn group(kind: Group, n: usize) -> ([u8; 4], usize) {
    match kind {
        Group::Leading if n < 10 => ([digit(n), 0, 0, 0], 1),
        Group::Leading if n < 100 => ([digit(n / 10), digit(n), 0, 0], 2),
        Group::Leading | Group::Padded => ([digit(n / 100), digit(n / 10), digit(n), 0], 3),
        Group::Fraction => {
            let len = if n == 0 {
                0
            } else if n.is_multiple_of(100) {
                2
            } else if n.is_multiple_of(10) {
                3
            } else {
                4
            };
            ([b'.', digit(n / 100), digit(n / 10), digit(n)], len)
        }
    }
}

/// The groups of the numbers below 1 000 as the low bytes of little-endian integers, each with
/// its length in the top byte (see [`TEXT`]).
const fn table(kind: Group) -> [u64; 1000] {
    let mut t = [0u64; 1000];
    let mut n = 0;
    while n < 1000 {
        let (bytes, len) = group(kind, n);
        t[n] = u32::from_le_bytes(bytes) as u64 | (len as u64) << 56;
        n += 1;
    }
    t
}

static LEADING: [u64; 1000] = table(Group::Leading);
static PADDED: [u64; 1000] = table(Group::Padded);
static FRACTIONS: [u64; 1000] = table(Group::Fraction);

/// `m / 1000` in decimal without trailing zeros (`|m| < 1e15`), from tables of three digits
/// and appended in one fixed-size copy. Digit by digit (a division and a branch for each, the
/// trailing zeros stripped in a loop), this was half of a CSV row's time; the three tables take
/// 24 KB of cache for it.
#[inline(always)]
fn write_thousandths(m: i64, out: &mut impl Out) {
    let a = m.unsigned_abs();
    let int = a / 1000;
    let frac = FRACTIONS[(a - int * 1000) as usize];
    out.put_fixed(b"-", usize::from(m < 0));
    if int < 1000 {
        // Most measurements: at most seven bytes, built in one register.
        let lead = LEADING[int as usize];
        let lead_len = (lead >> 56) as usize;
        let word = (lead & TEXT) | (frac & TEXT) << (8 * lead_len);
        out.put_fixed(&word.to_le_bytes(), lead_len + (frac >> 56) as usize);
        return;
    }
    if int < 1_000_000 {
        // Discharges and the like (`2173.91`): two groups, at most eleven bytes. The general path
        // below (four divisions, a search for the first group, a loop) took 7-9 % more of the
        // server's CPU for a 10-year CSV of such values (`benches/ab.py`, the history of
        // RESULTS.md).
        let lead = LEADING[(int / 1000) as usize];
        let lead_len = (lead >> 56) as usize;
        let word = u128::from(lead & TEXT)
            | u128::from(PADDED[(int % 1000) as usize] & TEXT) << (8 * lead_len)
            | u128::from(frac & TEXT) << (8 * (lead_len + 3));
        out.put_fixed(&word.to_le_bytes(), lead_len + 3 + (frac >> 56) as usize);
        return;
    }
    // Up to four groups of three digits and the fraction: at most 16 bytes.
    let groups = [
        int / 1_000_000_000,
        int / 1_000_000 % 1000,
        int / 1000 % 1000,
        int % 1000,
    ];
    let first = groups.iter().position(|&g| g > 0).unwrap_or(3);
    let lead = LEADING[groups[first] as usize];
    let mut len = (lead >> 56) as usize;
    let mut word = u128::from(lead & TEXT);
    for &g in &groups[first + 1..] {
        word |= u128::from(PADDED[g as usize] & TEXT) << (8 * len);
        len += 3;
    }
    word |= u128::from(frac & TEXT) << (8 * len);
    out.put_fixed(&word.to_le_bytes(), len + (frac >> 56) as usize);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_shortest_forms() {
        let mut o = Vec::new();
        for v in [
            12.0,
            0.1,
            -3.25,
            1e20,
            -0.0,
            -0.5,
            0.001,
            0.0001,
            1e-7,
            466.16,
            2.5e11,
            0.5,
            1024.0,
            99_999_999_999.999,
            99_999.999,
            -100_000.5,
            12_345.678,
            0.0005,
            0.125,
            0.000_976_562_5,
            -7.0,
            f64::NAN,
        ] {
            number(v, &mut o);
            o.push(b' ');
        }
        assert_eq!(
            String::from_utf8(o).unwrap(),
            "12 0.1 -3.25 1e20 0 -0.5 0.001 0.0001 1e-7 466.16 250000000000 0.5 1024 99999999999.999 \
             99999.999 -100000.5 12345.678 0.0005 0.125 0.0009765625 -7 null "
        );
    }

    /// Thousandths agree with `format!` on every length of integer part (one to four groups,
    /// at and around each power of ten) and every fraction, both signs.
    #[test]
    fn thousandths_match_format() {
        let mut ms: Vec<i64> = (0..200_000).collect();
        for p in 3..15 {
            let t = 10i64.pow(p);
            for f in [0, 1, 10, 100, 120, 999] {
                ms.extend([
                    t - 1000 + f,
                    t + f,
                    t + 1000 + f,
                    7 * t + 3000 + f,
                    10 * t - 1000 + f,
                ]);
            }
        }
        ms.push(999_999_999_999_999);
        for m in ms.into_iter().flat_map(|m| [m, -m]) {
            let a = m.unsigned_abs();
            let sign = if m < 0 { "-" } else { "" };
            let frac = format!("{:03}", a % 1000);
            let frac = frac.trim_end_matches('0');
            let want = if frac.is_empty() {
                format!("{sign}{}", a / 1000)
            } else {
                format!("{sign}{}.{frac}", a / 1000)
            };
            let mut got = Vec::new();
            write_thousandths(m, &mut got);
            assert_eq!(String::from_utf8(got).unwrap(), want, "{m} thousandths");
        }
    }

    /// The fast path prints what ryu prints (its shortest round-trip form), wherever ryu does
    /// not switch to an exponent.
    #[test]
    fn short_decimals_match_ryu() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for i in 0..200_000 {
            let r = next();
            let v = match i % 5 {
                // measured-looking values: up to 3 decimals, any magnitude below 1e12
                0 => {
                    (r % 2_000_000_000) as f64 / [1.0, 10.0, 100.0, 1000.0][(r >> 40) as usize % 4]
                        - 1e6
                }
                1 => (r % 100_000) as f64 / 1000.0,
                // the doubles next to a three-decimal value must not print as it
                2 => {
                    let v = (r % 100_000_000) as f64 / 1000.0;
                    f64::from_bits(if r >> 63 == 0 {
                        v.to_bits() + 1
                    } else {
                        v.to_bits().saturating_sub(1)
                    })
                }
                // powers of two and their neighbours, where the spacing of doubles halves
                3 => {
                    let p = 2f64.powi((r % 50) as i32 - 12);
                    f64::from_bits((p.to_bits() as i64 + (r >> 62) as i64 - 2) as u64)
                }
                _ => f64::from_bits(r),
            };
            if !v.is_finite() {
                continue;
            }
            let mut ours = Vec::new();
            number(v, &mut ours);
            let ours = String::from_utf8(ours).unwrap();
            assert_eq!(ours.parse::<f64>().unwrap(), v, "{ours} does not read back");
            let theirs = ryu::Buffer::new().format_finite(v).to_owned();
            if !theirs.contains('e') {
                let trim = |s: &str| s.trim_end_matches(".0").to_owned();
                assert_eq!(trim(&ours), trim(&theirs), "{v:e}");
            }
        }
    }
}
