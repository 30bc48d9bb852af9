//! The vocabulary of `observedProperty`: the quantities the service knows, and what each one
//! drives. A parameter may name any other; it is then served as it is, with none of this
//! (no derived values, a line chart, no sign check), and its import warns of it.

/// A quantity of the vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Property {
    pub name: &'static str,
    /// The letter of its derived main values (`W`: MHW, NNW …; `Q`: MHQ, NNQ …), if any.
    pub derived: Option<char>,
    /// Amounts per interval (precipitation): drawn as bars, summed by `type=annual` and by the
    /// monthly normals (`monthOfYear` of monthly sums).
    pub total: bool,
    /// Never below zero: a negative value is warned of on import.
    pub nonnegative: bool,
}

/// Every quantity of the vocabulary, as `data/README.md` lists them.
pub(crate) const VOCABULARY: [Property; 7] = [
    Property {
        name: "waterLevel",
        derived: Some('W'),
        total: false,
        nonnegative: false,
    },
    Property {
        name: "discharge",
        derived: Some('Q'),
        total: false,
        nonnegative: true,
    },
    Property {
        name: "groundwaterLevel",
        derived: None,
        total: false,
        nonnegative: false,
    },
    Property {
        name: "precipitation",
        derived: None,
        total: true,
        nonnegative: true,
    },
    Property {
        name: "airTemperature",
        derived: None,
        total: false,
        nonnegative: false,
    },
    Property {
        name: "waterTemperature",
        derived: None,
        total: false,
        nonnegative: false,
    },
    Property {
        name: "flowVelocity",
        derived: None,
        total: false,
        nonnegative: true,
    },
];

/// The quantity `name` names, if the vocabulary has it.
pub fn property(name: &str) -> Option<&'static Property> {
    VOCABULARY.iter().find(|p| p.name == name)
}

/// The vocabulary's names, comma-separated.
pub(crate) fn vocabulary() -> String {
    VOCABULARY
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}
