//! Writing a JSON text through any serde serializer, token by token: property values are
//! kept as text and written inside documents (pretty JSON, YAML) without building a tree.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, Serialize, SerializeMap, SerializeSeq, Serializer};

/// A deserializer as a `Serialize`: each token read is written to the serializer. The cell
/// lets `serialize(&self)` consume the deserializer once.
pub(super) struct Transcode<D>(pub(super) Cell<Option<D>>);

impl<'de, D: Deserializer<'de>> Serialize for Transcode<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let deserializer = self
            .0
            .take()
            .ok_or_else(|| ser::Error::custom("a value can be written once"))?;
        deserializer
            .deserialize_any(Forward(serializer))
            .map_err(ser::Error::custom)
    }
}

/// Writes every token it visits to the serializer it holds.
struct Forward<S>(S);

fn fail<E: de::Error>(error: impl fmt::Display) -> E {
    E::custom(error)
}

impl<'de, S: Serializer> Visitor<'de> for Forward<S> {
    type Value = S::Ok;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<S::Ok, E> {
        self.0.serialize_bool(v).map_err(fail)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<S::Ok, E> {
        self.0.serialize_i64(v).map_err(fail)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<S::Ok, E> {
        self.0.serialize_u64(v).map_err(fail)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<S::Ok, E> {
        self.0.serialize_f64(v).map_err(fail)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<S::Ok, E> {
        self.0.serialize_str(v).map_err(fail)
    }
    fn visit_unit<E: de::Error>(self) -> Result<S::Ok, E> {
        self.0.serialize_unit().map_err(fail)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<S::Ok, A::Error> {
        let mut out = self.0.serialize_seq(seq.size_hint()).map_err(fail)?;
        while seq.next_element_seed(Element(&mut out))?.is_some() {}
        out.end().map_err(fail)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<S::Ok, A::Error> {
        let mut out = self.0.serialize_map(map.size_hint()).map_err(fail)?;
        while map.next_key_seed(Key(&mut out))?.is_some() {
            map.next_value_seed(Entry(&mut out))?;
        }
        out.end().map_err(fail)
    }
}

/// Writes one array element.
struct Element<'a, O>(&'a mut O);

impl<'de, O: SerializeSeq> DeserializeSeed<'de> for Element<'_, O> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.0
            .serialize_element(&Transcode(Cell::new(Some(deserializer))))
            .map_err(fail)
    }
}

/// Writes one object key.
struct Key<'a, O>(&'a mut O);

impl<'de, O: SerializeMap> DeserializeSeed<'de> for Key<'_, O> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, O: SerializeMap> Visitor<'de> for Key<'_, O> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<(), E> {
        self.0.serialize_key(key).map_err(fail)
    }
}

/// Writes one object value.
struct Entry<'a, O>(&'a mut O);

impl<'de, O: SerializeMap> DeserializeSeed<'de> for Entry<'_, O> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.0
            .serialize_value(&Transcode(Cell::new(Some(deserializer))))
            .map_err(fail)
    }
}
