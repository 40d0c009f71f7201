use super::*;

const ES: usize = 40;

fn meta() -> TreeMeta {
    TreeMeta {
        root: 3,
        height: 2,
        objects: 99_999,
    }
}

fn entry(b: u8) -> Box<[u8]> {
    vec![b; ES].into()
}

fn changes() -> Vec<RawChange> {
    vec![
        Change::Set {
            pos: 3,
            entry: entry(7),
        },
        Change::Push(entry(8)),
        Change::Remove { pos: 0 },
    ]
}

/// Every record kind, with the stamps `format` carries.
fn all(format: RecordFormat) -> Vec<Record> {
    let stamp = (format == RecordFormat::Compact).then_some(300);
    vec![
        Record::Create {
            id: 5,
            level: 1,
            stamp,
            entries: vec![1u8; 2 * ES],
        },
        Record::Create {
            id: 1 << 40,
            level: 0,
            stamp,
            entries: vec![],
        },
        Record::Modify {
            id: 9,
            level: 0,
            stamp,
            changes: changes(),
        },
        Record::Change {
            id: 9,
            level: 2,
            stamp,
            change: changes()[0].clone(),
        },
        Record::Rewrite {
            id: 12,
            level: 0,
            stamp,
            entries: vec![2u8; 3 * ES],
        },
        Record::Image {
            id: 5,
            level: 0,
            entries: vec![3u8; ES],
        },
        Record::Free(4),
        Record::Alloc(200),
        Record::Deleted { id: 4, level: 2 },
        Record::Meta(meta()),
        Record::Written(vec![1, 2, 300]),
        Record::Written(vec![]),
        Record::Snapshot {
            meta: Some(meta()),
            next_page: 10,
            free: vec![2, 7],
            clock: stamp,
        },
        Record::Snapshot {
            meta: None,
            next_page: 0,
            free: vec![],
            clock: stamp.map(|_| 0),
        },
        Record::own(OWN_FIRST, format, |w| {
            w.id(9);
            w.flag(true);
            w.id(1 << 33);
        }),
        Record::Own {
            kind: 255,
            body: vec![],
        },
        Record::State {
            id: 77,
            state: NodeState {
                new: true,
                mods: 12,
                level: 1,
                stamp: 1 << 20,
                base_len: 3,
                next_new: 2,
                versions: vec![
                    (0, None),
                    (1, Some(vec![9u8; ES])),
                    (1 << 32, Some(vec![4u8; ES])),
                ],
            },
        },
    ]
}

#[test]
fn every_record_round_trips_in_both_formats() {
    for format in [RecordFormat::Fixed, RecordFormat::Compact] {
        for rec in all(format) {
            let bytes = rec.encode(format).unwrap();
            assert_eq!(
                Record::decode(&bytes, format, ES).unwrap(),
                rec,
                "{format:?}"
            );
            // Every truncation is an error, never a wrong record or a panic (a policy's own
            // record is opaque here: its reader checks the body, below).
            let own = matches!(rec, Record::Own { .. });
            for cut in (0..bytes.len()).filter(|_| !own) {
                if let Ok(r) = Record::decode(&bytes[..cut], format, ES) {
                    // The fixed format's trailing lists end with the record: a cut at an
                    // item boundary is a shorter valid record of the same kind.
                    assert_eq!(format, RecordFormat::Fixed, "{rec:?} cut at {cut}");
                    assert_ne!(r, rec);
                }
            }
        }
    }
}

/// The fixed format is byte for byte the FAST codec of log format 1, so FAST logs written
/// before the shared codec are still read.
#[test]
fn fixed_records_are_the_old_fast_bytes() {
    let mut want = vec![CREATE];
    want.extend_from_slice(&5u64.to_le_bytes());
    want.extend_from_slice(&1u32.to_le_bytes());
    want.extend_from_slice(&[1u8; 2 * ES]);
    let rec = &all(RecordFormat::Fixed)[0];
    assert_eq!(rec.encode(RecordFormat::Fixed).unwrap(), want);
    let mut m = vec![MODIFY];
    m.extend_from_slice(&9u64.to_le_bytes());
    m.extend_from_slice(&0u32.to_le_bytes());
    m.push(SET);
    m.extend_from_slice(&3u32.to_le_bytes());
    m.extend_from_slice(&[7u8; ES]);
    m.push(PUSH);
    m.extend_from_slice(&[8u8; ES]);
    m.push(REMOVE);
    m.extend_from_slice(&0u32.to_le_bytes());
    assert_eq!(
        all(RecordFormat::Fixed)[2]
            .encode(RecordFormat::Fixed)
            .unwrap(),
        m
    );
    let mut f = vec![WRITTEN];
    for id in [1u64, 2, 300] {
        f.extend_from_slice(&id.to_le_bytes());
    }
    assert_eq!(
        Record::decode(&f, RecordFormat::Fixed, ES).unwrap(),
        Record::Written(vec![1, 2, 300])
    );
    // The old FAST "image" kind (3) was also its rewrite record: it reads as an image.
    let mut i = vec![IMAGE];
    i.extend_from_slice(&5u64.to_le_bytes());
    i.extend_from_slice(&0u32.to_le_bytes());
    assert_eq!(
        Record::decode(&i, RecordFormat::Fixed, ES).unwrap(),
        Record::Image {
            id: 5,
            level: 0,
            entries: vec![]
        }
    );
}

/// The compact format has the sizes of the postcard encoding eFIND used (log format 1):
/// varints, one-byte kinds and flags, counted strings and lists, so log volumes are kept.
#[test]
fn compact_records_have_the_old_efind_sizes() {
    let sizes: Vec<(Record, usize)> = vec![
        // kind + id + level + stamp(300: 2 bytes) + count + entries
        (
            all(RecordFormat::Compact)[0].clone(),
            1 + 1 + 1 + 2 + 1 + 2 * ES,
        ),
        // kind + id + level + stamp + change kind + pos + count + entry
        (
            all(RecordFormat::Compact)[3].clone(),
            1 + 1 + 1 + 2 + 1 + 1 + 1 + ES,
        ),
        (Record::Alloc(200), 1 + 2),
        (Record::Free(4), 1 + 1),
        // kind + flag + meta (1 + 1 + 3) + next + count + 2 ids + clock
        (
            all(RecordFormat::Compact)[12].clone(),
            1 + 1 + 5 + 1 + 1 + 2 + 2,
        ),
    ];
    for (rec, size) in sizes {
        assert_eq!(
            rec.encode(RecordFormat::Compact).unwrap().len(),
            size,
            "{rec:?}"
        );
    }
}

#[test]
fn stamps_follow_the_format_and_damage_is_an_error() {
    let stamped = Record::Free(1);
    assert!(stamped.encode(RecordFormat::Fixed).is_ok());
    let c = |stamp| Record::Create {
        id: 1,
        level: 0,
        stamp,
        entries: vec![],
    };
    let e = c(Some(1))
        .encode(RecordFormat::Fixed)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no timestamps"), "{e}");
    let e = c(None)
        .encode(RecordFormat::Compact)
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a timestamp"), "{e}");
    for (bytes, want) in [
        (vec![], "empty record"),
        (vec![0], "unknown record kind 0"),
        (vec![MODIFY, 1, 2], "truncated"),
        (vec![CREATE, 1, 0, 0, 200, 1], "runs past the record"),
        (vec![FREE, 1, 9], "trailing bytes"),
        (vec![SNAPSHOT, 7], "neither 0 nor 1"),
    ] {
        let e = Record::decode(&bytes, RecordFormat::Compact, ES)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{bytes:?}: {e}");
    }
    let mut odd = vec![CREATE];
    odd.extend_from_slice(&1u64.to_le_bytes());
    odd.extend_from_slice(&0u32.to_le_bytes());
    odd.extend_from_slice(&[0u8; ES + 1]);
    let e = Record::decode(&odd, RecordFormat::Fixed, ES)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not whole"), "{e}");
}

/// A policy's own record is opaque to the codec: its body round-trips as written, is read
/// back only by the policy's reader of its kind, and a reader that leaves bytes unread or
/// runs out of them is an error, never a wrong record.
#[test]
fn own_records_are_read_only_by_their_kind() {
    for format in [RecordFormat::Fixed, RecordFormat::Compact] {
        let rec = Record::own(OWN_FIRST + 3, format, |w| {
            w.id(1 << 40);
            w.len(2);
            w.small(7);
            w.small(9);
        });
        let back = Record::decode(&rec.encode(format).unwrap(), format, ES).unwrap();
        assert_eq!(back, rec);
        let read = |r: &mut Reader<'_>| Ok((r.id()?, r.list(Reader::small)?));
        let got = back.read_own(OWN_FIRST + 3, format, read).unwrap().unwrap();
        assert_eq!(got, (1 << 40, vec![7, 9]));
        assert!(back.read_own(OWN_FIRST, format, read).is_none());
        assert!(Record::Free(1).read_own(OWN_FIRST, format, read).is_none());
        let short = |r: &mut Reader<'_>| r.id();
        let e = back.read_own(OWN_FIRST + 3, format, short).unwrap();
        assert!(e.unwrap_err().to_string().contains("trailing bytes"));
        let long = |r: &mut Reader<'_>| Ok((r.id()?, r.list(Reader::small)?, r.id()?));
        if format == RecordFormat::Compact {
            let e = back.read_own(OWN_FIRST + 3, format, long).unwrap();
            assert!(e.unwrap_err().to_string().contains("truncated"));
        }
    }
    let e = Record::Own {
        kind: OWN_FIRST - 1,
        body: vec![],
    }
    .encode(RecordFormat::Fixed)
    .unwrap_err()
    .to_string();
    assert!(e.contains("below"), "{e}");
}
