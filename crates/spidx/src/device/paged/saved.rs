//! The saved forms of a [`PageStore`] in a device's state file: the inline index
//! ([`PageStore`]'s own serde form, the formats before the index pages) and the paged one
//! ([`Indexed`]), each checked on load.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::*;

/// The index as saved in the state file. Its first member is the pages file's name, and a
/// paged device's saved state starts with its [`PageStore`], so that
/// [`peek_pages_file`](crate::device::pages::peek_pages_file) finds the name in any of them.
#[derive(Serialize)]
struct SavedRef<'a> {
    file: &'a str,
    page_size: u64,
    generation: u64,
    len: u64,
    garbage: u64,
    index: &'a [Slot],
}

#[derive(Deserialize)]
struct Saved {
    file: String,
    page_size: u64,
    generation: u64,
    len: u64,
    garbage: u64,
    index: Vec<Slot>,
}

impl Serialize for PageStore {
    /// Serialises the index of the saved pages; pages written since the last
    /// [`PageStore::save`] cannot be serialised (an error, never a silent loss).
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if !self.dirty.is_empty() {
            return Err(serde::ser::Error::custom(format!(
                "{} pages written since the last save of the pages file",
                self.dirty.len()
            )));
        }
        if self.paged {
            return Err(serde::ser::Error::custom(
                "a store with a paged index is saved with `Indexed`",
            ));
        }
        let empty = SavedRef {
            file: "",
            page_size: self.page_size as u64,
            generation: 0,
            len: 0,
            garbage: 0,
            index: &[],
        };
        match &self.base {
            Some(Base {
                name,
                generation,
                len,
                garbage,
                index: Index::Inline(index),
                ..
            }) => SavedRef {
                file: name,
                page_size: self.page_size as u64,
                generation: *generation,
                len: *len,
                garbage: *garbage,
                index,
            }
            .serialize(s),
            _ => empty.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PageStore {
    /// Restores the index; [`PageStore::attach`] must then open the pages file.
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = Saved::deserialize(d)?;
        let page_size = check_page_size(s.page_size)?;
        if s.file.is_empty() && !s.index.is_empty() {
            return Err(serde::de::Error::custom("saved pages without a pages file"));
        }
        let base = (!s.file.is_empty()).then_some(Base {
            name: s.file,
            generation: s.generation,
            len: s.len,
            garbage: s.garbage,
            index: Index::Inline(s.index),
            file: None,
            writable: false,
        });
        Ok(PageStore {
            base,
            ..PageStore::new(page_size)
        })
    }
}

fn check_page_size<E: serde::de::Error>(page_size: u64) -> std::result::Result<usize, E> {
    usize::try_from(page_size)
        .ok()
        .filter(|&p| p > 0 && p <= 1 << 30)
        .ok_or_else(|| E::custom("invalid page size"))
}

/// A [`PageStore`] with a paged index ([`index`]) as a state file of format
/// [`crate::device::pages::INDEX_PAGED_FORMAT`] saves it: `Indexed(&store)` serialises (after
/// [`PageStore::save`]), `Indexed<PageStore>` deserialises (then [`PageStore::attach`]).
/// The state keeps the names of the pages file and of the index pages file, the index of
/// the index pages and the number of records of each.
#[derive(Debug)]
pub(crate) struct Indexed<T>(pub T);

impl Serialize for Indexed<&PageStore> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let st = self.0;
        let unsaved = st.dirty.len() as u64 + st.dirty_index_pages();
        if unsaved > 0 || !st.paged {
            return Err(serde::ser::Error::custom(format!(
                "{unsaved} pages or index pages written since the last save, or an inline \
                 index"
            )));
        }
        let empty = PageStore::new(table::TABLE_PAGE);
        let (file, index, counts, generation, len, garbage) = match &st.base {
            None => ("", &empty, Vec::new(), 0, 0, 0),
            Some(b) => {
                let Index::Paged(ix) = &b.index else {
                    return Err(serde::ser::Error::custom(
                        "an inline index in a paged store",
                    ));
                };
                let (index, counts) = ix.saved();
                (
                    b.name.as_str(),
                    index,
                    counts,
                    b.generation,
                    b.len,
                    b.garbage,
                )
            }
        };
        index::SavedRef {
            file,
            index,
            counts,
            page_size: st.page_size as u64,
            generation,
            len,
            garbage,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Indexed<PageStore> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let s = index::Saved::deserialize(d)?;
        let page_size = check_page_size(s.page_size)?;
        let mut store = PageStore::new_paged(page_size);
        if s.file.is_empty() {
            if !s.counts.is_empty() || s.index.base.is_some() {
                return Err(D::Error::custom("saved pages without a pages file"));
            }
            return Ok(Indexed(store));
        }
        let ix = PagedIndex::restore(s.index, s.counts, s.page_size, s.len);
        store.base = Some(Base {
            name: s.file,
            generation: s.generation,
            len: s.len,
            garbage: s.garbage,
            index: Index::Paged(Box::new(ix)),
            file: None,
            writable: false,
        });
        Ok(Indexed(store))
    }
}
