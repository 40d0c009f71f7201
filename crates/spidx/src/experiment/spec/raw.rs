//! The spec file as written: raw structures with the span of every value, rejecting
//! unknown keys. [`super`] validates them.

use crate::spatial::HostChoice;
use serde::{Deserialize, Deserializer};
use toml::Spanned;

use crate::store::StoreConfig;

/// A number or a string (`30` or `"30%"`), kept as text for the unit parsers.
#[derive(Debug, Clone)]
pub(super) struct Text(pub(super) String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// One integer or a list of them (`10` or `[1, 10, 100]`).
#[derive(Debug, Clone)]
pub(super) struct Ints(pub(super) Vec<i64>);

impl<'de> Deserialize<'de> for Ints {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ints;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer or a list of integers")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<Ints, E> {
                Ok(Ints(vec![v]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Ints, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element::<i64>()? {
                    v.push(x);
                }
                Ok(Ints(v))
            }
        }
        d.deserialize_any(V)
    }
}

pub(super) type S<T> = Spanned<T>;
pub(super) type Opt<T> = Option<Spanned<T>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpec {
    pub(super) name: S<String>,
    pub(super) description: Option<String>,
    pub(super) results: Opt<String>,
    pub(super) dataset: S<RawDataset>,
    #[serde(default)]
    pub(super) protocol: RawProtocol,
    pub(super) matrix: S<RawMatrix>,
    pub(super) workload: Opt<Vec<S<RawWorkload>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDataset {
    pub(super) file: Opt<String>,
    pub(super) skip_invalid: Opt<bool>,
    pub(super) renumber: Opt<bool>,
    pub(super) explode: Opt<bool>,
    pub(super) order: Opt<String>,
    pub(super) generate: Opt<RawGenerate>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGenerate {
    pub(super) distribution: S<String>,
    pub(super) count: S<i64>,
    pub(super) dims: Opt<i64>,
    pub(super) seed: Opt<i64>,
    pub(super) max_side: Opt<f64>,
    pub(super) clusters: Opt<i64>,
    pub(super) vectors: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProtocol {
    pub(super) repetitions: Opt<i64>,
    pub(super) warmup: Opt<i64>,
    pub(super) drop_caches: Option<bool>,
    pub(super) check: Option<bool>,
    pub(super) host: Option<S<HostChoice>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatrix {
    pub(super) index: S<Vec<S<toml::Table>>>,
    pub(super) page_size: Opt<Vec<S<Text>>>,
    pub(super) device: Opt<Vec<S<RawDevice>>>,
    pub(super) buffer: Opt<Vec<S<String>>>,
    pub(super) store: Opt<Vec<S<StoreConfig>>>,
    pub(super) occupancy: Opt<Vec<S<RawOccupancy>>>,
    pub(super) layout: Opt<Vec<S<String>>>,
    pub(super) dims: Opt<Vec<S<i64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOccupancy {
    pub(super) min_fill: Opt<Text>,
    pub(super) max_fill: Opt<Text>,
    pub(super) leaf_min_fill: Opt<Text>,
    pub(super) leaf_max_fill: Opt<Text>,
}

/// A device: a name (`"ssd-v300"`, `"file:/mnt/x.bin"`, `"my.toml"`) or a table
/// `{ device = "...", params = { key = value }, label = "..." }`.
pub(super) struct RawDevice {
    pub(super) device: String,
    pub(super) params: toml::Table,
    pub(super) label: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDeviceTable {
    pub(super) device: String,
    #[serde(default)]
    pub(super) params: toml::Table,
    pub(super) label: Option<String>,
}

impl<'de> Deserialize<'de> for RawDevice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawDevice;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a device name or a table { device = \"...\", params = { ... } }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<RawDevice, E> {
                Ok(RawDevice {
                    device: v.to_string(),
                    params: toml::Table::new(),
                    label: None,
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<RawDevice, A::Error> {
                let t =
                    RawDeviceTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RawDevice {
                    device: t.device,
                    params: t.params,
                    label: t.label,
                })
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub(super) kind: S<String>,
    pub(super) name: Opt<String>,
    pub(super) area: Opt<Text>,
    pub(super) queries: Opt<i64>,
    pub(super) aspect: Opt<f64>,
    pub(super) windows: Opt<String>,
    pub(super) seed: Opt<i64>,
    pub(super) predicate: Opt<String>,
    pub(super) refine: Opt<bool>,
    pub(super) k: Opt<Ints>,
    pub(super) place: Opt<String>,
    pub(super) operations: Opt<i64>,
    pub(super) insert: Opt<Text>,
    pub(super) delete: Opt<Text>,
    pub(super) update: Opt<Text>,
    pub(super) query: Opt<Text>,
    pub(super) method: Opt<String>,
    pub(super) fill: Opt<Text>,
    pub(super) access: Opt<String>,
    pub(super) request: Opt<Text>,
    pub(super) streams: Opt<Ints>,
    pub(super) instances: Opt<String>,
    pub(super) memory: Opt<Text>,
    pub(super) final_flush: Opt<bool>,
}
