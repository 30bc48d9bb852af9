//! Free-text search over station names, water body names and ids (`q=`): case- and
//! accent-insensitive substring matching, so that `koeln`, `Köln` and `KOLN` all find Köln,
//! and `25820100` the gauge of that number. And the ids a mistyped one is nearest to
//! ([`edits_within`]), for a 404's "did you mean".
//!
//! Text is folded two ways and a query matches when it is found in either: German letters
//! spelled out (`ö` → `oe`, `ß` → `ss`), as users without the letters type them, and accents
//! dropped (`ö` → `o`, `é` → `e`), as users of other languages do. The table covers Latin-1 and
//! the Latin Extended-A letters of European place names; other characters are compared as
//! lower case.

/// A query folded both ways, once per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextQuery {
    spelled: String,
    plain: String,
}

impl TextQuery {
    /// None for a query with no letters or digits left (nothing to search for).
    pub fn new(q: &str) -> Option<Self> {
        let query = Self {
            spelled: fold(q, true),
            plain: fold(q, false),
        };
        query
            .plain
            .chars()
            .any(char::is_alphanumeric)
            .then_some(query)
    }

    /// Whether the query is in any of `texts`.
    pub fn matches<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> bool {
        texts
            .into_iter()
            .any(|t| fold(t, true).contains(&self.spelled) || fold(t, false).contains(&self.plain))
    }
}

/// `s` in lower case with accents dropped, or German letters spelled out (`spell_out`);
/// white space runs become one space.
fn fold(s: &str, spell_out: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.trim().chars().flat_map(char::to_lowercase) {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
            continue;
        }
        space = false;
        let folded: &str = match c {
            'ä' | 'æ' if spell_out => "ae",
            'ö' | 'œ' if spell_out => "oe",
            'ü' if spell_out => "ue",
            'ß' => "ss",
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
            'æ' => "ae",
            'ç' | 'ć' | 'č' => "c",
            'ď' | 'đ' => "d",
            'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' | 'ě' => "e",
            'ì' | 'í' | 'î' | 'ï' | 'ī' | 'į' => "i",
            'ł' | 'ľ' | 'ĺ' => "l",
            'ñ' | 'ń' | 'ň' => "n",
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => "o",
            'œ' => "oe",
            'ř' | 'ŕ' => "r",
            'ś' | 'š' | 'ş' => "s",
            'ť' | 'ţ' => "t",
            'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' => "u",
            'ý' | 'ÿ' => "y",
            'ź' | 'ż' | 'ž' => "z",
            _ => {
                out.push(c);
                continue;
            }
        };
        out.push_str(folded);
    }
    out
}

/// How many edits a mistyped id of `typed`'s length may be from the one meant: one in four
/// characters, at least one and at most six (a UUID with a few characters wrong).
pub fn typo_reach(typed: &str) -> usize {
    (typed.chars().count() / 4).clamp(1, 6)
}

/// The edits (insertions, deletions, substitutions; case ignored) between `a` and `b`, if at
/// most `reach`: a Levenshtein distance computed in a band of `reach` around the diagonal, so
/// that a catalog of 100 000 ids is gone through in a few milliseconds.
pub fn edits_within(a: &str, b: &str, reach: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    if a.len().abs_diff(b.len()) > reach {
        return None;
    }
    let far = reach + 1;
    let mut row: Vec<usize> = (0..=b.len()).map(|j| j.min(far)).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = (i + 1).min(far);
        let (lo, hi) = ((i + 1).saturating_sub(reach), (i + 1 + reach).min(b.len()));
        let mut best = row[0];
        for j in 1..=b.len() {
            let above = row[j];
            row[j] = if j < lo || j > hi {
                far
            } else {
                let substitute = diagonal + usize::from(*ca != b[j - 1]);
                substitute.min(above + 1).min(row[j - 1] + 1).min(far)
            };
            diagonal = above;
            best = best.min(row[j]);
        }
        if best > reach {
            return None;
        }
    }
    Some(row[b.len()]).filter(|d| *d <= reach)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_names_however_they_are_typed() {
        for q in ["koeln", "Köln", "KOLN", "köln", " köln ", "öln"] {
            let query = TextQuery::new(q).unwrap();
            assert!(query.matches(["Köln"]), "{q}");
        }
        let rhein = TextQuery::new("rhein").unwrap();
        assert!(rhein.matches(["Bonn", "Rhein"]));
        assert!(!rhein.matches(["Bonn", "Main"]));
        assert!(
            TextQuery::new("straße")
                .unwrap()
                .matches(["Kölner Strasse 5"])
        );
        assert!(TextQuery::new("sao").unwrap().matches(["São Paulo"]));
        assert!(
            TextQuery::new("gross  gerau")
                .unwrap()
                .matches(["Groß-Gerau", "Groß Gerau"])
        );
        assert!(!TextQuery::new("koeln").unwrap().matches(["Kolin"]));
    }

    #[test]
    fn mistyped_ids_are_near_the_ones_meant() {
        assert_eq!(edits_within("25820100", "25820100", 2), Some(0));
        assert_eq!(edits_within("25820110", "25820100", 2), Some(1));
        assert_eq!(edits_within("2582010", "25820100", 2), Some(1));
        assert_eq!(edits_within("28520100", "25820100", 2), Some(2));
        assert_eq!(edits_within("KOELN", "koeln", 1), Some(0));
        assert_eq!(edits_within("25829999", "25820100", 2), None);
        assert_eq!(edits_within("1", "25820100", 6), None);
        // The band gives what the whole table gives, within the reach.
        let pairs = [
            ("kitten", "sitting"),
            ("flaw", "lawn"),
            ("abcdef", "azced"),
            ("", "ab"),
        ];
        for (a, b) in pairs {
            let full = edits_within(a, b, 10).unwrap();
            for reach in 0..5 {
                assert_eq!(
                    edits_within(a, b, reach),
                    (full <= reach).then_some(full),
                    "{a} {b} {reach}"
                );
            }
        }
        assert_eq!(typo_reach("25820100"), 2);
        assert_eq!(typo_reach("e404fc35-7fc8-4275-851e-40b12dd374de"), 6);
        assert!(TextQuery::new("  ").is_none());
        assert!(TextQuery::new("-").is_none());
    }
}
