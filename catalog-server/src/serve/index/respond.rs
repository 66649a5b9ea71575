//! A member's answer from the index: its bundle's stored base, then the fields that depend on
//! the channel and the RPC, `csvJson` (synthesized on request when the catalog has only the
//! CSV's metadata) and the manifests, as shared pieces; and which bundles asked for again
//! are kept in memory.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::answer::AnswerWriter;
use super::encoding::{bundle_field, put_field};
use super::hot::KeptBundle;
use super::{
    BundleAnswer, BundleRecord, CatalogIndex, ChannelEntry, ChannelMember, CsvSource,
    SynthesisInput, asked,
};
use crate::serve::csv::{CsvContext, synthesize};
use crate::serve::encoded::EncodedBundle;
use crate::serve::spill::BlobRef;

impl CatalogIndex {
    /// A bundle's `csvJson`, and whether it was synthesized just now; `input` is its
    /// synthesis input when the caller read it already, `objects` its manifests. `None` when
    /// the spill file failed.
    fn csv_bytes(
        &self,
        name: &str,
        record: &BundleRecord,
        input: Option<Vec<u8>>,
        objects: &Bytes,
    ) -> Option<(Bytes, bool)> {
        let blob = match &record.csv {
            CsvSource::Object(i) => {
                let blobs = &self.arrays.objects[record.objects.range()];
                let Some(blob) = blobs.get(*i as usize) else {
                    return Some((Bytes::new(), false));
                };
                let start: usize = blobs[..*i as usize].iter().map(BlobRef::len).sum();
                return Some((objects.slice(start..start + blob.len()), false));
            }
            CsvSource::Metadata(blob) => blob,
            CsvSource::None => return Some((Bytes::new(), false)),
        };
        if let Some(kept) = record.synthesized_csv.get() {
            return Some((self.spill.read(*kept).ok()?.into(), false));
        }
        let input = match input {
            Some(input) => input,
            None => self.spill.read(*blob).ok()?,
        };
        // An input this build wrote and cannot read back is a bug; the answer then has no
        // CSV rather than no answer.
        let Ok(input) = serde_json::from_slice::<SynthesisInput>(&input) else {
            return Some((Bytes::new(), false));
        };
        let package = &self.arrays.packages[record.package as usize];
        let context = CsvContext {
            name,
            version: input.version,
            package_description: &package.description,
            package_icon: package.icon.clone(),
            related_images: input.related_images,
        };
        let csv = synthesize(input.metadata.get(), &context).unwrap_or_default();
        Some((csv.into(), true))
    }

    /// A member's `api.Bundle` message, encoded: the stored base of its bundle followed by
    /// the fields that depend on the channel and the RPC.
    ///
    /// `ListBundles` (`listed`) adds the channel's edges, and `csvJson` and `object` only when
    /// the bundle is served inline (no bundle path); the single-bundle RPCs add `csvJson` and
    /// `object` and leave the edges blank, as opm does. A decoder reads fields in any order
    /// and the base holds none of these, so appending them gives the same message as
    /// decoding the base, setting them and encoding it again, without the copies.
    ///
    /// A bundle asked for again by a single-bundle RPC keeps its base, CSV and manifests in
    /// memory while the budget lasts; beyond it a synthesized CSV is kept in the spill file.
    /// Not on the first request: a resolution or a mirror reads most bundles once, and
    /// keeping each of those cost a third of a first answer's time (generated catalog,
    /// 20,000 bundles each asked once).
    fn encode_answer(
        &self,
        channel: &ChannelEntry,
        member: &ChannelMember,
        listed: bool,
    ) -> Option<BundleAnswer> {
        let record = &self.arrays.bundles[member.bundle as usize];
        let blobs = &self.arrays.objects[record.objects.range()];
        let sends_csv = !listed || record.inline;
        let again =
            !listed && record.asked.fetch_max(asked::ONCE, Ordering::Relaxed) == asked::ONCE;
        let kept = if sends_csv {
            self.hot.get(member.bundle)
        } else {
            None
        };
        let mut input = None;
        let mut base = None;
        let mut answer = match &kept {
            Some(kept) => {
                let mut answer = AnswerWriter::default();
                answer.share(&kept.base);
                answer
            }
            None => {
                let mut head = Vec::with_capacity(record.base.len() + 256);
                match &record.csv {
                    CsvSource::Metadata(blob)
                        if sends_csv && record.synthesized_csv.get().is_none() =>
                    {
                        // The spill file has a copy of the base right after the synthesis
                        // input: one read for both.
                        self.spill
                            .read_into(blob.followed_by(record.base)?, &mut head)
                            .ok()?;
                        input = Some(head.drain(..blob.len()).collect::<Vec<u8>>());
                    }
                    _ => self.bases.read_into(record.base, &mut head).ok()?,
                }
                if again {
                    // Exactly sized: the buffer was also the synthesis input's, and a kept
                    // `Bytes` holds its whole allocation.
                    let shared = Bytes::copy_from_slice(&head);
                    let mut answer = AnswerWriter::default();
                    answer.share(&shared);
                    base = Some(shared);
                    answer
                } else {
                    AnswerWriter::starting_with(head)
                }
            }
        };
        let glue = answer.glue();
        put_field(
            glue,
            bundle_field::CHANNEL_NAME,
            channel.name.as_bytes(),
            false,
        );
        put_field(
            glue,
            bundle_field::SKIP_RANGE,
            self.str(member.skip_range).as_bytes(),
            false,
        );
        if listed {
            put_field(
                glue,
                bundle_field::REPLACES,
                self.replaces(member).as_bytes(),
                false,
            );
            for skip in self.skips(member) {
                put_field(glue, bundle_field::SKIPS, skip.as_bytes(), true);
            }
        }
        if !sends_csv {
            return Some(answer.finish());
        }
        let (objects, (csv, synthesized)) = match &kept {
            Some(kept) => (kept.objects.clone(), (kept.csv.clone(), false)),
            None => {
                let mut objects = Vec::new();
                self.spill.read_all_into(blobs, &mut objects).ok()?;
                let objects = Bytes::from(objects);
                let csv = self.csv_bytes(self.name(member), record, input, &objects)?;
                (objects, csv)
            }
        };
        answer.share_field(bundle_field::CSV_JSON, &csv, false);
        // A bundle known only by its metadata has no manifests: opm sends the synthesized CSV
        // as its one object.
        if matches!(record.csv, CsvSource::Metadata(_)) && blobs.is_empty() {
            answer.share_field(bundle_field::OBJECT, &csv, false);
        } else {
            let mut start = 0;
            for blob in blobs {
                let object = objects.slice(start..start + blob.len());
                answer.share_field(bundle_field::OBJECT, &object, true);
                start += blob.len();
            }
        }
        if let Some(base) = base {
            // A synthesized CSV's string grew by doubling; keep an exactly sized copy.
            let csv = if synthesized {
                Bytes::copy_from_slice(&csv)
            } else {
                csv.clone()
            };
            let kept = KeptBundle { base, csv, objects };
            if !self.hot.keep(member.bundle, kept.clone()) {
                record.asked.store(asked::NOT_KEPT, Ordering::Relaxed);
                if synthesized {
                    self.keep_synthesized(record, &kept.csv);
                }
            }
        } else if listed && synthesized {
            self.keep_synthesized(record, &csv);
        }
        Some(answer.finish())
    }

    /// Keeps a synthesized CSV in the spill file.
    fn keep_synthesized(&self, record: &BundleRecord, csv: &[u8]) {
        if let Ok(blob) = self.spill.append(csv) {
            // Two requests racing both synthesize; the first stored blob wins.
            let _ = record.synthesized_csv.set(blob);
        }
    }

    /// The message `ListBundles` streams at `position`, encoded.
    pub fn listed_answer(&self, position: usize) -> Option<EncodedBundle> {
        let &(channel, member) = self.arrays.listing.get(position)?;
        let channel = &self.arrays.channels[channel as usize];
        let member = &self.arrays.members[member as usize];
        let answer = self.encode_answer(channel, member, true)?;
        Some(answer.into_encoded())
    }

    /// The single-bundle RPCs' answer for a member of `channel`: `csvJson` and `object`
    /// filled, edges blank.
    pub fn single_answer(
        &self,
        channel: &ChannelEntry,
        member: &ChannelMember,
    ) -> Option<BundleAnswer> {
        self.encode_answer(channel, member, false)
    }
}
#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::serve::api;
    use crate::serve::load::{LoadOptions, load_snapshot};

    /// A one-bundle catalog whose CSV is synthesized from `olm.csv.metadata`.
    const CATALOG: &str = r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}
{"schema":"olm.channel","name":"stable","package":"p","entries":[{"name":"p.v1.0.0"}]}
{"schema":"olm.bundle","name":"p.v1.0.0","package":"p","image":"quay.io/p/bundle:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}},{"type":"olm.csv.metadata","value":{"displayName":"P","description":"a package"}}]}
"#;

    #[test]
    fn repeated_answers_are_equal_whether_kept_in_memory_or_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("p")).unwrap();
        std::fs::write(dir.path().join("p/catalog.json"), CATALOG).unwrap();
        for budget in [0, 1, 1 << 20] {
            let options = LoadOptions {
                answer_memory: budget,
                ..Default::default()
            };
            let index = load_snapshot(dir.path(), &options).unwrap().index;
            let package = index.package("p").unwrap();
            let channel = index.channel(package, "stable").unwrap();
            let member = index.head(channel);
            let answers: Vec<Bytes> = (0..4)
                .map(|_| {
                    let answer = index.single_answer(channel, member).unwrap();
                    answer.into_encoded().into_bytes()
                })
                .collect();
            assert!(answers.iter().all(|a| *a == answers[0]), "budget {budget}");
            let bundle = api::Bundle::decode(answers[0].clone()).unwrap();
            assert!(bundle.csv_json.contains("\"displayName\":\"P\""));
            assert_eq!(bundle.object, std::slice::from_ref(&bundle.csv_json));
            let record = &index.arrays.bundles[member.bundle as usize];
            let state = record.asked.load(Ordering::Relaxed);
            let kept = index.hot.get(member.bundle).is_some();
            if budget == 1 << 20 {
                assert_eq!((state, kept), (asked::ONCE, true));
            } else {
                // Refused once, not copied again to be refused again; the synthesized CSV is
                // in the spill file instead.
                assert_eq!((state, kept), (asked::NOT_KEPT, false));
                assert!(record.synthesized_csv.get().is_some());
            }
        }
    }
}
