//! Any JSON value written as the text a `serde_json::Value` of it serializes to (compact,
//! object keys sorted, the last of repeated keys kept, serde_json's escapes and number
//! format), in one pass over the input and without building the tree.
//!
//! Property values are stored in that form (see `raw.rs`). Reading them this way replaced a
//! skip pass, a sortedness pass and, for unsorted objects, a round trip through a `Value`:
//! the generated catalog's `olm.csv.metadata` values are not key-sorted, so every bundle
//! paid for a tree.

use std::cell::RefCell;
use std::fmt::{self, Write};

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::go_json::push_escaped as push_json_escaped;

/// The canonical text of the value `deserializer` holds.
pub(super) fn canonical_text<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Box<str>, D::Error> {
    // Written into a buffer the thread reuses, then copied once at its final size: growing
    // a new string for every value reallocated it ~7 times for a 500-byte value (10 % of
    // serve's start-up profile).
    thread_local! {
        static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
    }
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut out) => {
            out.clear();
            deserializer.deserialize_any(Canonical { out: &mut out })?;
            let text: Box<str> = out.as_str().into();
            if out.capacity() > 1 << 20 {
                // A huge value (a bundle object) does not pin its buffer for the thread's life.
                *out = String::new();
            }
            Ok(text)
        }
        Err(_) => {
            let mut out = String::new();
            deserializer.deserialize_any(Canonical { out: &mut out })?;
            Ok(out.into_boxed_str())
        }
    })
}

/// Appends the canonical text of the value it visits.
struct Canonical<'a> {
    out: &'a mut String,
}

impl<'de> DeserializeSeed<'de> for Canonical<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Canonical<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<(), E> {
        self.out.push_str(if value { "true" } else { "false" });
        Ok(())
    }

    fn visit_i64<E>(self, value: i64) -> Result<(), E> {
        let _ = write!(self.out, "{value}");
        Ok(())
    }

    fn visit_u64<E>(self, value: u64) -> Result<(), E> {
        let _ = write!(self.out, "{value}");
        Ok(())
    }

    fn visit_f64<E>(self, value: f64) -> Result<(), E> {
        // Rare in catalogs; serde_json's own formatting (non-finite values become null, as
        // a `Value` makes them).
        self.out
            .push_str(&serde_json::to_string(&value).unwrap_or_else(|_| "null".into()));
        Ok(())
    }

    fn visit_str<E>(self, value: &str) -> Result<(), E> {
        self.out.push('"');
        push_json_escaped(self.out, value);
        self.out.push('"');
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.push('[');
        let mut first = true;
        loop {
            let before = self.out.len();
            if !first {
                self.out.push(',');
            }
            if seq
                .next_element_seed(Canonical { out: self.out })?
                .is_none()
            {
                self.out.truncate(before);
                break;
            }
            first = false;
        }
        self.out.push(']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.out.push('{');
        let body = self.out.len();
        // Each entry's key and where its `"key":value` text is; written in input order and
        // reordered at the end only if the keys did not strictly increase.
        let mut entries: Vec<(KeyIs<'de>, usize, usize)> = Vec::new();
        let mut sorted = true;
        while let Some(key) = map.next_key::<KeyIs>()? {
            if let Some((previous, _, _)) = entries.last() {
                sorted &= previous.0 < key.0;
                self.out.push(',');
            }
            let start = self.out.len();
            self.out.push('"');
            push_json_escaped(self.out, &key.0);
            self.out.push_str("\":");
            map.next_value_seed(Canonical { out: self.out })?;
            entries.push((key, start, self.out.len()));
        }
        if !sorted {
            // A stable sort keeps repeated keys in input order; the last of each run wins.
            entries.sort_by(|a, b| a.0.0.cmp(&b.0.0));
            let mut reordered = String::with_capacity(self.out.len() - body);
            for (i, (key, start, end)) in entries.iter().enumerate() {
                if entries.get(i + 1).is_some_and(|next| next.0.0 == key.0) {
                    continue;
                }
                if !reordered.is_empty() {
                    reordered.push(',');
                }
                reordered.push_str(&self.out[*start..*end]);
            }
            self.out.truncate(body);
            self.out.push_str(&reordered);
        }
        self.out.push('}');
        Ok(())
    }
}

/// An object key, borrowed when it has no escapes.
pub(super) struct KeyIs<'de>(pub(super) std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for KeyIs<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<KeyIs<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = KeyIs<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<KeyIs<'de>, E> {
                Ok(KeyIs(key.into()))
            }
            fn visit_str<E>(self, key: &str) -> Result<KeyIs<'de>, E> {
                Ok(KeyIs(key.to_string().into()))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn canonical(text: &str) -> String {
        canonical_text(&mut serde_json::Deserializer::from_str(text))
            .unwrap()
            .into()
    }

    #[test]
    fn equals_the_text_of_a_decoded_value() {
        for text in [
            r#"{"b":1,"a":{"d":2,"c":3},"b":4}"#,
            r#"{ "a" : [1, 2.50, "x y", -0, 1e3, -7, 18446744073709551615],
                 "b": {"c": null, "e": true, "d": false} }"#,
            r#"[{"x":1},{"b":1,"a":2},[],{}]"#,
            r#"{"k\u00e9y":"caf\u00e9 \"quoted\" \\ \/ \n\t","kéy":"x","Z":1}"#,
            r#""plain""#,
            "12.0",
            "null",
            r#"{"a":{"b":{"d":1,"c":2},"a":[{"z":0,"y":1}]}}"#,
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                canonical(text),
                serde_json::to_string(&value).unwrap(),
                "{text}"
            );
        }
    }

    #[test]
    fn reads_from_a_value_as_well() {
        let value: Value = serde_json::from_str(r#"{"b":[1,{"d":1,"c":2}],"a":"<&>"}"#).unwrap();
        assert_eq!(
            &*canonical_text(value.clone()).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }

    #[test]
    fn invalid_json_is_an_error() {
        assert!(canonical_text(&mut serde_json::Deserializer::from_str(r#"{"a":}"#)).is_err());
        assert!(canonical_text(&mut serde_json::Deserializer::from_str("1e400")).is_err());
    }
}
