//! [`PlanSchema`]: the fields a plan node produces, each with the relation (table or alias) it
//! belongs to, and name resolution with "did you mean" suggestions.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use morsel_storage::{DataType, Field, Schema};

use crate::error::{PlanError, PlanResult};
use crate::expr::ColumnRef;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanField {
    pub relation: Option<String>,
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
}

impl PlanField {
    pub fn new(
        relation: Option<String>,
        name: impl Into<String>,
        data_type: DataType,
        nullable: bool,
    ) -> Self {
        Self {
            relation,
            name: name.into(),
            data_type,
            nullable,
        }
    }

    pub fn qualified_name(&self) -> String {
        match &self.relation {
            Some(r) => format!("{r}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// A reference that resolves to exactly this field.
    pub fn column_ref(&self) -> ColumnRef {
        ColumnRef {
            relation: self.relation.clone(),
            name: self.name.clone(),
        }
    }

    fn matches(&self, c: &ColumnRef, exact: bool) -> bool {
        let name_ok = if exact {
            self.name == c.name
        } else {
            self.name.eq_ignore_ascii_case(&c.name)
        };
        name_ok
            && match (&c.relation, &self.relation) {
                (None, _) => true,
                (Some(want), Some(have)) => want.eq_ignore_ascii_case(have),
                (Some(_), None) => false,
            }
    }
}

#[derive(Clone, Debug, Default)]
pub struct PlanSchema {
    /// Shared: plans are cloned and rebuilt often while they are optimized, and a schema is
    /// never changed in place.
    fields: Arc<[PlanField]>,
    /// Positions by lower-case name, built on the first lookup in a wide schema (a
    /// 10,000-column `SELECT *` looks every column up, which scanning makes quadratic);
    /// hashed with foldhash (randomly seeded), several times faster than SipHash on short
    /// names.
    by_name: Arc<OnceLock<HashMap<String, Vec<usize>, foldhash::fast::RandomState>>>,
}

/// Schemas at most this wide are searched field by field (faster than hashing the name).
const INDEXED_FROM: usize = 32;

impl PartialEq for PlanSchema {
    fn eq(&self, other: &Self) -> bool {
        self.fields == other.fields
    }
}

impl Eq for PlanSchema {}

impl std::hash::Hash for PlanSchema {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.fields.hash(state);
    }
}

impl From<Arc<[PlanField]>> for PlanSchema {
    fn from(fields: Arc<[PlanField]>) -> Self {
        Self {
            fields,
            by_name: Arc::default(),
        }
    }
}

impl PlanSchema {
    pub fn new(fields: Vec<PlanField>) -> Self {
        Self::from(Arc::<[PlanField]>::from(fields))
    }

    /// The fields of a storage schema, all belonging to `relation`.
    pub fn from_schema(relation: Option<&str>, schema: &Schema) -> Self {
        let fields = schema
            .fields
            .iter()
            .map(|f| {
                PlanField::new(
                    relation.map(str::to_string),
                    f.name.clone(),
                    f.data_type,
                    f.nullable,
                )
            })
            .collect();
        Self::new(fields)
    }

    pub fn fields(&self) -> &[PlanField] {
        &self.fields
    }

    pub fn field(&self, i: usize) -> &PlanField {
        &self.fields[i]
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// All fields moved under one relation name (a table alias or subquery alias).
    pub fn with_relation(&self, relation: &str) -> Self {
        let fields = self
            .fields
            .iter()
            .map(|f| PlanField {
                relation: Some(relation.to_string()),
                ..f.clone()
            })
            .collect();
        Self::new(fields)
    }

    /// Concatenates two schemas (a join's output).
    pub fn join(&self, right: &PlanSchema, right_nullable: bool) -> Self {
        let right = right.fields.iter().map(|f| PlanField {
            nullable: f.nullable || right_nullable,
            ..f.clone()
        });
        Self::new(self.fields.iter().cloned().chain(right).collect())
    }

    /// The same fields, all nullable (the outer side of an outer join).
    pub fn nullable(&self) -> Self {
        Self::new(
            self.fields
                .iter()
                .map(|f| PlanField {
                    nullable: true,
                    ..f.clone()
                })
                .collect(),
        )
    }

    /// The storage schema (names without relations).
    pub fn to_schema(&self) -> Schema {
        Schema::new(
            self.fields
                .iter()
                .map(|f| Field::new(f.name.clone(), f.data_type, f.nullable))
                .collect(),
        )
    }

    /// Position of the field `c` names. Exact-case matches win over case-insensitive ones.
    pub fn index_of(&self, c: &ColumnRef) -> PlanResult<usize> {
        match self.lookup(c) {
            Ok(i) => Ok(i),
            Err(hits) if !hits.is_empty() => Err(PlanError::AmbiguousColumn {
                name: c.to_string(),
                options: hits
                    .iter()
                    .map(|&i| self.fields[i].qualified_name())
                    .collect(),
            }),
            Err(_) => Err(PlanError::ColumnNotFound {
                name: c.to_string(),
                candidates: self.close_matches(&c.name),
                available: self.fields.iter().map(PlanField::qualified_name).collect(),
            }),
        }
    }

    /// Position of the one field `c` names, `None` where it names none or several (no error
    /// is built: for the planner's many lookups that may miss).
    pub fn position(&self, c: &ColumnRef) -> Option<usize> {
        self.lookup(c).ok()
    }

    /// Every field `c` names: one, several when it is ambiguous, none when not found.
    pub fn positions(&self, c: &ColumnRef) -> Vec<usize> {
        self.lookup(c).map_or_else(|all| all, |one| vec![one])
    }

    /// The one field `c` names, or every field it names ambiguously (none: not found).
    fn lookup(&self, c: &ColumnRef) -> Result<usize, Vec<usize>> {
        if self.fields.len() <= INDEXED_FROM {
            return self.pick(0..self.fields.len(), c);
        }
        let index = self.by_name.get_or_init(|| {
            let mut m: HashMap<String, Vec<usize>, _> = HashMap::default();
            for (i, f) in self.fields.iter().enumerate() {
                m.entry(f.name.to_ascii_lowercase()).or_default().push(i);
            }
            m
        });
        // Most names are lower case already: no copy to look them up.
        let lower = match c.name.bytes().any(|b| b.is_ascii_uppercase()) {
            true => Cow::Owned(c.name.to_ascii_lowercase()),
            false => Cow::Borrowed(c.name.as_str()),
        };
        let named = index.get(lower.as_ref()).map_or(&[][..], Vec::as_slice);
        self.pick(named.iter().copied(), c)
    }

    /// Of the fields at `named`, the one `c` names exactly, else the one it names ignoring
    /// case; all of them where it names several.
    fn pick(
        &self,
        named: impl Iterator<Item = usize> + Clone,
        c: &ColumnRef,
    ) -> Result<usize, Vec<usize>> {
        for exact in [true, false] {
            let mut hits = named.clone().filter(|&i| self.fields[i].matches(c, exact));
            if let Some(first) = hits.next() {
                return match hits.next() {
                    None => Ok(first),
                    Some(second) => Err([first, second].into_iter().chain(hits).collect()),
                };
            }
        }
        Err(Vec::new())
    }

    /// Whether `c` names at least one field here, maybe ambiguously.
    pub fn names_any(&self, c: &ColumnRef) -> bool {
        !matches!(self.lookup(c), Err(all) if all.is_empty())
    }

    /// Whether `c` resolves to exactly one field here.
    pub fn has(&self, c: &ColumnRef) -> bool {
        self.position(c).is_some()
    }

    /// Field names within a small edit distance of `name` (case-insensitive), closest first.
    pub fn close_matches(&self, name: &str) -> Vec<String> {
        let want = name.to_ascii_lowercase();
        let mut scored: Vec<(usize, String)> = self
            .fields
            .iter()
            .map(|f| {
                (
                    edit_distance(&want, &f.name.to_ascii_lowercase()),
                    f.qualified_name(),
                )
            })
            .filter(|(d, _)| *d <= 1.max(want.len() / 3))
            .collect();
        scored.sort();
        scored.dedup_by(|a, b| a.1 == b.1);
        scored.into_iter().take(3).map(|(_, n)| n).collect()
    }
}

impl fmt::Display for PlanSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .fields
            .iter()
            .map(|x| format!("{}: {}", x.qualified_name(), x.data_type))
            .collect();
        write!(f, "[{}]", parts.join(", "))
    }
}

/// Levenshtein distance between two strings (by chars).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_qualified_and_suggests() {
        let s = PlanSchema::new(vec![
            PlanField::new(Some("a".into()), "id", DataType::Int64, false),
            PlanField::new(Some("b".into()), "id", DataType::Int64, false),
            PlanField::new(Some("b".into()), "price", DataType::Float64, true),
        ]);
        assert_eq!(s.index_of(&ColumnRef::qualified("b", "id")).unwrap(), 1);
        assert_eq!(s.index_of(&ColumnRef::new("PRICE")).unwrap(), 2);
        assert!(matches!(
            s.index_of(&ColumnRef::new("id")),
            Err(PlanError::AmbiguousColumn { .. })
        ));
        let e = s
            .index_of(&ColumnRef::new("prise"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "column prise not found (did you mean b.price?); available columns: a.id, b.id, b.price");
        // The lookup that builds no error: found, ambiguous, missing.
        assert_eq!(s.position(&ColumnRef::new("PRICE")), Some(2));
        assert_eq!(s.position(&ColumnRef::new("id")), None);
        assert_eq!(s.position(&ColumnRef::new("prise")), None);
        assert!(s.has(&ColumnRef::qualified("a", "id")) && !s.has(&ColumnRef::new("id")));
    }
}
