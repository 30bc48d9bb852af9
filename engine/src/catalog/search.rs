//! Free-text search over station names and water body names (`q=`): case- and
//! accent-insensitive substring matching, so that `koeln`, `Köln` and `KOLN` all find Köln.
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
        assert!(TextQuery::new("  ").is_none());
        assert!(TextQuery::new("-").is_none());
    }
}
