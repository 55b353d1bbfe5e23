//! Resealed damage to one block of a table: each trial changes the block's
//! payload and rewrites its trailer, so that the checksum passes and only
//! the block's own decoding can tell. A filter block so damaged must never
//! hide a key without `verify` reporting it.

use std::path::Path;

use bloomlsm::sst::format::{BlockHandle, ChecksumType, block_trailer};

/// What one trial's damaged store showed.
pub struct Seen {
    /// The damaged block still decodes.
    pub decodes: bool,
    /// Reads that found the block unusable and read the data instead.
    pub unusable_reads: u64,
    /// A read that differed from the model, if any.
    pub wrong: Option<String>,
    /// `verify` reported the damage.
    pub reported: bool,
}

/// Runs `trials` trials on block `h` (checksummed with `ck`) of the table
/// at `path`: `damage(trial, payload)` changes the block's payload, its
/// trailer is resealed, and `look(trial)` opens the store and says what it
/// saw. Holds each trial to the rules of a damaged filter block: one that
/// no longer decodes is read around (counted) and answers nothing wrong,
/// and a wrong answer is one `verify` reports. Some trial must leave the
/// block undecodable. The table is restored at the end.
pub fn resealed_filter_damage(
    path: &Path,
    h: BlockHandle,
    ck: ChecksumType,
    trials: usize,
    mut damage: impl FnMut(usize, &mut [u8]),
    mut look: impl FnMut(usize) -> Seen,
) {
    let original = std::fs::read(path).unwrap();
    let (start, len) = (h.offset as usize, h.size as usize);
    let (mut undecodable, mut reported) = (0, 0);
    for trial in 0..trials {
        let mut bytes = original.clone();
        damage(trial, &mut bytes[start..start + len]);
        let trailer = block_trailer(ck, &bytes[start..start + len], 0, h.offset);
        bytes[start + len..start + len + trailer.len()].copy_from_slice(&trailer);
        std::fs::write(path, &bytes).unwrap();

        let seen = look(trial);
        let wrong = &seen.wrong;
        if !seen.decodes {
            undecodable += 1;
            assert!(wrong.is_none(), "trial {trial}: {wrong:?}");
            assert!(seen.unusable_reads > 0, "trial {trial}");
        }
        if seen.reported {
            reported += 1;
        } else {
            assert!(
                wrong.is_none(),
                "trial {trial}: a wrong scan of {wrong:?} unreported"
            );
        }
    }
    std::fs::write(path, &original).unwrap();
    assert!(
        undecodable > 0 && reported >= undecodable,
        "{undecodable} {reported}"
    );
}
